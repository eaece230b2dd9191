#include "http_client.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>

#include <algorithm>
#include <cctype>
#include <stdexcept>

namespace redlock::test {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;

asio::awaitable<http_reply> async_http(std::uint16_t port, http_call call)
{
    constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);
    http_reply out;
    beast::tcp_stream stream(co_await asio::this_coro::executor);
    stream.expires_after(call.timeout);
    const asio::ip::tcp::endpoint server(asio::ip::make_address("127.0.0.1"), port);
    auto [connect_ec] = co_await stream.async_connect(server, use_tuple);
    if (connect_ec) {
        out.error = connect_ec;
        co_return out;
    }
    http::request<http::string_body> req{call.method, call.target, 11};
    req.set(http::field::host, "127.0.0.1:" + std::to_string(port));
    for (const auto& [name, value] : call.headers) req.set(name, value);
    req.body() = std::move(call.body);
    if (call.method != http::verb::get || !req.body().empty()) req.prepare_payload();
    req.keep_alive(false);
    auto [write_ec, written] = co_await http::async_write(stream, req, use_tuple);
    if (write_ec) {
        out.error = write_ec;
        co_return out;
    }
    beast::flat_buffer buffer;
    http::response<http::string_body> res;
    auto [read_ec, read] = co_await http::async_read(stream, buffer, res, use_tuple);
    if (read_ec) {
        out.error = read_ec;
        co_return out;
    }
    out.status = res.result_int();
    out.body = std::move(res.body());
    for (const auto& field : res) {
        std::string name(field.name_string());
        std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
        out.headers[name] = std::string(field.value());
    }
    boost::system::error_code ignored;
    stream.socket().shutdown(asio::ip::tcp::socket::shutdown_both, ignored);
    co_return out;
}

http_reply send_http(std::uint16_t port, http_call call)
{
    asio::io_context ctx;
    http_reply out;
    std::exception_ptr failure;
    asio::co_spawn(ctx, async_http(port, std::move(call)), [&](std::exception_ptr e, http_reply r) {
        failure = e;
        out = std::move(r);
    });
    ctx.run();
    if (failure) std::rethrow_exception(failure);
    return out;
}

std::optional<std::string> json_member(const std::string& body, const std::string& name)
{
    const std::string key = "\"" + name + "\":";
    auto at = body.find(key);
    if (at == std::string::npos) return std::nullopt;
    at += key.size();
    while (at < body.size() && body[at] == ' ') ++at;
    if (at < body.size() && body[at] == '"') {
        const auto end = body.find('"', at + 1);
        if (end == std::string::npos) return std::nullopt;
        return body.substr(at + 1, end - at - 1);
    }
    const auto end = body.find_first_of(",}", at);
    return body.substr(at, end == std::string::npos ? std::string::npos : end - at);
}

}  // namespace redlock::test
