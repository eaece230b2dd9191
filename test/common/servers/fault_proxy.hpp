// A TCP proxy in front of one node that injects network faults: delay, blackhole, lost replies,
// resets and refused connects (the kernel here has no netem, and toxiproxy is not packaged).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace redlock::test {

namespace detail {
class proxy_core;
}

// Listens on a free loopback port and forwards each accepted connection to 127.0.0.1:upstream_port,
// on its own thread. A mode change applies to new and existing connections at once. When one side closes (or
// resets) its connection, the chunks the proxy still delays for the other side are delivered first, as a slow
// network would deliver them; then both connections close.
class fault_proxy {
public:
    enum class mode {
        pass,          // forward both ways
        delay,         // forward each chunk `delay` after it arrived, both ways, order kept
        blackhole,     // accept, read and discard everything, never answer
        drop_replies,  // forward requests; discard the server's replies (commands run, clients hear nothing)
        reset,         // close client connections with RST, current ones at once, new ones on accept
        refuse,        // close the listener: connects are refused (open connections keep passing)
    };

    // `tls` only changes url(): the proxy forwards bytes, so TLS passes through it end to end.
    explicit fault_proxy(std::uint16_t upstream_port, bool tls = false);
    ~fault_proxy();
    fault_proxy(const fault_proxy&) = delete;
    fault_proxy& operator=(const fault_proxy&) = delete;

    std::uint16_t port() const;
    std::string url() const;  // "redis://127.0.0.1:P" ("rediss://" when tls)

    // Returns once the mode is in force. Leaving refuse re-opens the listener on the same port.
    void set_mode(mode m, std::chrono::milliseconds delay = {});
    mode current_mode() const;

    std::size_t connections() const;  // client connections accepted so far
    std::size_t open_connections() const;

    // Closes every current client connection with RST (SO_LINGER 0); the mode stays.
    void reset_all();

private:
    std::unique_ptr<detail::proxy_core> core_;
    bool tls_;
};

}  // namespace redlock::test
