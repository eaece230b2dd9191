#include <boost/asio/connect.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/write.hpp>

#include <common/servers/raw_client.hpp>
#include <optional>

namespace redlock::test {

namespace asio = boost::asio;
using asio::ip::tcp;
using boost::system::error_code;

// Runs one async operation on the private io_context; cancels it when the time is up.
template <class Start>
error_code raw_client::run_for(std::chrono::milliseconds timeout, Start start)
{
    std::optional<error_code> result;
    ctx_.restart();
    start([&result](error_code ec, auto&&...) { result = ec; });
    ctx_.run_for(timeout);
    if (result) return *result;
    error_code ignored;
    socket_.cancel(ignored);
    ctx_.restart();
    ctx_.run();  // let the cancelled operation finish before its handler's state goes away
    return asio::error::timed_out;
}

raw_client::raw_client(std::uint16_t port, std::chrono::milliseconds timeout)
{
    tcp::endpoint endpoint(asio::ip::address_v4::loopback(), port);
    auto ec = run_for(timeout, [&](auto handler) { socket_.async_connect(endpoint, std::move(handler)); });
    if (ec) throw boost::system::system_error(ec, "connect to port " + std::to_string(port));
    socket_.set_option(tcp::no_delay(true));
}

error_code raw_client::try_connect(std::uint16_t port, std::chrono::milliseconds timeout)
{
    try {
        raw_client client(port, timeout);
        return {};
    } catch (const boost::system::system_error& e) {
        return e.code();
    }
}

void raw_client::write(std::string_view bytes, std::chrono::milliseconds timeout)
{
    auto ec = run_for(timeout, [&](auto handler) {
        asio::async_write(socket_, asio::buffer(bytes.data(), bytes.size()), std::move(handler));
    });
    if (ec) throw boost::system::system_error(ec, "write");
}

std::string raw_client::read_until(std::string_view delimiter, std::chrono::milliseconds timeout, error_code& ec)
{
    std::size_t length = 0;
    ec = run_for(timeout, [&](auto handler) {
        asio::async_read_until(socket_, asio::dynamic_buffer(buffer_), std::string(delimiter),
                               [&length, handler = std::move(handler)](error_code e, std::size_t n) mutable {
                                   length = n;
                                   handler(e);
                               });
    });
    if (ec) return {};
    std::string result = buffer_.substr(0, length);
    buffer_.erase(0, length);
    return result;
}

std::string raw_client::command(std::string_view request, std::chrono::milliseconds timeout)
{
    write(request, timeout);
    error_code ec;
    auto reply = read_until("\r\n", timeout, ec);
    if (ec) throw boost::system::system_error(ec, "read reply");
    return reply;
}

void raw_client::close()
{
    error_code ignored;
    socket_.close(ignored);
}

}  // namespace redlock::test
