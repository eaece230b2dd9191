// A blocking TCP client with a deadline on every step, for tests that talk bytes to a port.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <system_error>

namespace redlock::test {

class raw_client {
public:
    // Connects to 127.0.0.1:port; throws boost::system::system_error on failure (e.g. connection_refused)
    // or asio::error::timed_out.
    explicit raw_client(std::uint16_t port, std::chrono::milliseconds timeout = std::chrono::seconds(2));

    // The outcome of a connect attempt: success, connection_refused, timed_out, ...
    static boost::system::error_code try_connect(std::uint16_t port,
                                                 std::chrono::milliseconds timeout = std::chrono::seconds(2));

    // Writes all bytes; throws on failure or timeout.
    void write(std::string_view bytes, std::chrono::milliseconds timeout = std::chrono::seconds(2));

    // Reads until `delimiter` arrived and returns the bytes up to and including it. On failure returns ""
    // and sets ec: asio::error::timed_out, asio::error::eof, asio::error::connection_reset, ...
    std::string read_until(std::string_view delimiter, std::chrono::milliseconds timeout,
                           boost::system::error_code& ec);

    // One request, one "\r\n"-terminated reply line (e.g. "+PONG\r\n"); throws on failure or timeout.
    std::string command(std::string_view request, std::chrono::milliseconds timeout = std::chrono::seconds(2));

    void close();

private:
    template <class Start>
    boost::system::error_code run_for(std::chrono::milliseconds timeout, Start start);

    boost::asio::io_context ctx_;
    boost::asio::ip::tcp::socket socket_{ctx_};
    std::string buffer_;
};

}  // namespace redlock::test
