// A fake Redis whose replies a test scripts: malformed bytes, old servers, odd timings.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace redlock::test {

namespace detail {
class scripted_core;
}

// Listens on a free loopback port, on its own thread. Bytes from a client are buffered until a whole
// command arrived (a RESP array of bulk strings, or an inline line such as "PING\r\n"); then the
// responder gets that command's raw bytes and whatever it returns is written back. Pipelined commands
// give one call each, in order. The responder runs on the server's thread.
class scripted_server {
public:
    using responder = std::function<std::string(std::string_view request_bytes)>;

    // Reply values with a meaning: close the connection (FIN), or reset it (RST).
    static const std::string close_connection;
    static const std::string reset_connection;

    explicit scripted_server(responder r);
    ~scripted_server();
    scripted_server(const scripted_server&) = delete;
    scripted_server& operator=(const scripted_server&) = delete;

    std::uint16_t port() const;
    std::string url() const;          // "redis://127.0.0.1:P"
    std::size_t connections() const;  // accepted so far

    // The arguments of one command's raw bytes: {"SET", "k", "v"}; {} if they are not a command.
    static std::vector<std::string> arguments(std::string_view request_bytes);

    // The length of the first complete command in `bytes`: 0 while incomplete. Bytes that cannot
    // start a command count as one command up to the next "\r\n" (or all of them).
    static std::size_t command_length(std::string_view bytes);

private:
    std::unique_ptr<detail::scripted_core> core_;
};

}  // namespace redlock::test
