// One connection: requests read one after another with a timeout per phase and size limits, each answered
// by the service, keep-alive until the client, a timeout or the drain ends it.
#if defined(__GNUC__) && !defined(__clang__)
// g++ 12 pairs the allocation of an Asio coroutine frame with the frame's own operator delete (which frees it
// correctly) and reports -Wmismatched-new-delete, for some frames only, as its inlining decides.
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif

#include "server.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/write.hpp>

namespace http_inventory {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);

namespace {

// A request we refuse before the handler sees it (too large, malformed): answered, then the connection is
// closed, since the rest of the stream cannot be trusted to start at a request boundary.
asio::awaitable<void> refuse(connection_state& c, const config& cfg, http::status status, std::string_view code,
                             std::string_view message)
{
    response res = error_reply(status, code, message);
    res.keep_alive(false);
    c.stream.expires_after(cfg.write_timeout);
    co_await http::async_write(c.stream, res, use_tuple);
}

bool is_parse_error(const boost::system::error_code& ec)
{
    return ec.category() == http::make_error_code(http::error::bad_target).category() &&
           ec != http::error::end_of_stream && ec != http::error::partial_message;
}

}  // namespace

asio::awaitable<void> run_session(std::shared_ptr<connection_state> c, server& srv)
{
    service& svc = srv.svc_;
    const config& cfg = svc.cfg;
    beast::flat_buffer buffer;
    bool first_request = true;
    // A drain ends a kept-alive connection between requests, but a connection accepted during the shutdown
    // delay still gets its first request answered (with `Connection: close`).
    while (first_request || !svc.draining) {
        // The wait for a request's first byte: a new connection gets the header timeout (connecting and saying
        // nothing is a slow header), a kept-alive one the idle timeout (a fixed short read timeout would cut
        // every idle keep-alive connection, a complaint of many Beast users).
        if (buffer.size() == 0) {
            c->stream.expires_after(first_request ? cfg.header_timeout : cfg.idle_timeout);
            auto [ec, n] = co_await c->stream.async_read_some(buffer.prepare(4096), use_tuple);
            if (ec == beast::error::timeout) svc.stats.count_dropped(first_request ? "header" : "idle");
            if (ec) break;
            buffer.commit(n);
        }
        first_request = false;

        http::request_parser<http::string_body> parser;
        parser.header_limit(cfg.header_limit);
        parser.body_limit(cfg.body_limit);
        c->stream.expires_after(cfg.header_timeout);  // counts from the first byte: slow headers end here
        auto [header_ec, header_bytes] = co_await http::async_read_header(c->stream, buffer, parser, use_tuple);
        if (header_ec == beast::error::timeout) svc.stats.count_dropped("header");
        if (header_ec == http::error::header_limit)
            co_await refuse(*c, cfg, http::status::request_header_fields_too_large, "header_too_large",
                            "request header above the limit");
        else if (header_ec == http::error::body_limit)
            co_await refuse(*c, cfg, http::status::payload_too_large, "body_too_large", "request body above the limit");
        else if (is_parse_error(header_ec))
            co_await refuse(*c, cfg, http::status::bad_request, "bad_request", header_ec.message());
        if (header_ec) break;

        c->busy = true;  // from here on the drain lets this request finish
        if (parser.get()[http::field::expect] == "100-continue" && !parser.is_done()) {
            http::response<http::empty_body> go_on{http::status::continue_, parser.get().version()};
            c->stream.expires_after(cfg.write_timeout);
            auto [ec, n] = co_await http::async_write(c->stream, go_on, use_tuple);
            if (ec) break;
        }
        if (!parser.is_done()) {
            c->stream.expires_after(cfg.body_timeout);
            auto [body_ec, body_bytes] = co_await http::async_read(c->stream, buffer, parser, use_tuple);
            if (body_ec == beast::error::timeout) svc.stats.count_dropped("body");
            if (body_ec == http::error::body_limit)
                co_await refuse(*c, cfg, http::status::payload_too_large, "body_too_large",
                                "request body above the limit");
            else if (is_parse_error(body_ec))
                co_await refuse(*c, cfg, http::status::bad_request, "bad_request", body_ec.message());
            if (body_ec) break;
        }
        c->stream.expires_never();  // the handler has its own deadline (--request-timeout)

        request req = parser.release();
        const unsigned version = req.version();
        const bool keep_alive = req.keep_alive();
        std::string client_id = client_id_of(req, c->peer);
        auto handling = handle(svc, std::move(req), std::move(client_id));
        response res = co_await std::move(handling);
        res.version(version);
        res.keep_alive(keep_alive && !svc.draining);  // a drain closes each connection after its response

        c->stream.expires_after(cfg.write_timeout);
        auto [write_ec, written] = co_await http::async_write(c->stream, res, use_tuple);
        c->busy = false;
        if (write_ec == beast::error::timeout) svc.stats.count_dropped("write");
        if (write_ec || !res.keep_alive()) break;
    }
    // Half-close first: the client reads all of our last response before it sees the end of the stream.
    boost::system::error_code ignored;
    c->stream.socket().shutdown(asio::ip::tcp::socket::shutdown_send, ignored);
    c->stream.close();
}

}  // namespace http_inventory
