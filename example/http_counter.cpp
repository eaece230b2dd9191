// A short HTTP server on Beast and redlock-asio coroutines: POST /counter/{name}/increment adds one to a counter
// kept in Redis by read-modify-write under a Redlock lock, committed with a fenced write, so that concurrent
// requests to any number of instances never lose an increment; GET /counter/{name} reads it. Failures become
// HTTP statuses by their redlock::condition, never by their message. The session loop is that of Beast's
// example/http/server/awaitable; example/http_inventory/ is the production-grade service.
// Usage: redlock_example_http_counter [URL,URL,... [PORT]]
// The lock node URLs come from the argument, else from $REDLOCK_NODES (comma-separated), else
// redis://127.0.0.1:6379; the counters are kept on the first node (in practice, any Redis of yours). It listens on
// 127.0.0.1:PORT (default 8080; 0 picks a free port) and prints "listening on 127.0.0.1:PORT".
#include <redlock/redlock.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using namespace std::chrono_literals;
using response = http::response<http::string_body>;
constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);

std::vector<redlock::node_config> node_list(int argc, char** argv)
{
    const char* env = std::getenv("REDLOCK_NODES");
    std::string list = argc > 1 ? argv[1] : env && *env ? env : "redis://127.0.0.1:6379";
    std::vector<redlock::node_config> nodes;
    for (std::size_t begin = 0; begin <= list.size();) {
        auto end = list.find(',', begin);
        if (end == std::string::npos) end = list.size();
        if (end > begin) nodes.push_back(redlock::parse_url(list.substr(begin, end - begin)));
        begin = end + 1;
    }
    return nodes;
}

// The {name} of "/counter/{name}" + suffix, or "" when the target is not of that form or the name has other
// characters than [A-Za-z0-9_-] (it becomes part of Redis keys).
std::string counter_name(std::string_view target, std::string_view suffix)
{
    constexpr std::string_view prefix = "/counter/";
    constexpr std::string_view allowed = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-";
    if (target.size() <= prefix.size() + suffix.size() || !target.starts_with(prefix) || !target.ends_with(suffix))
        return {};
    const auto name = target.substr(prefix.size(), target.size() - prefix.size() - suffix.size());
    return name.find_first_not_of(allowed) == std::string_view::npos ? std::string(name) : std::string();
}

response reply(http::status status, std::string body)
{
    response res{status, 11};
    res.set(http::field::content_type, "text/plain");
    res.body() = std::move(body) + "\n";
    res.prepare_payload();
    return res;
}

// The counter's value on the store, 0 if it was never incremented.
asio::awaitable<std::int64_t> read_value(const redlock::redis& store, std::string key)
{
    redlock::request get;
    get.push("GET", key);
    redlock::response got;
    co_await store.async_exec(get, got, key, asio::use_awaitable);  // routed by its key (a Cluster needs it)
    if (got[0].is_null()) co_return 0;
    if (auto value = got[0].as_integer()) co_return *value;
    throw boost::system::system_error(redlock::error::protocol_error, key + " is not an integer");
}

// The critical section, while the lock is held. Every store error is thrown: with_lock releases the lock and
// rethrows it. async_fenced_write throws error::stale_token when a holder with a newer token has written.
asio::awaitable<std::int64_t> add_one(const redlock::redis& store, std::string name, std::uint64_t token)
{
    const std::string value_key = "{counter:" + name + "}:value", guard = "{counter:" + name + "}:guard";
    // Claim before reading: the guard takes our token first, so a holder that read before us and then stalled
    // past its lease cannot write after us. Fencing only the final write would let it write the same count as
    // ours, and an increment would be lost.
    redlock::fenced_write claim(guard, token);
    claim.command("EXISTS", value_key);  // a fenced write needs a command: this one changes nothing
    co_await redlock::async_fenced_write(store, claim, asio::use_awaitable);

    const std::int64_t value = co_await read_value(store, value_key) + 1;
    redlock::fenced_write commit(guard, token);
    commit.command("SET", value_key, {value});
    co_await redlock::async_fenced_write(store, commit, asio::use_awaitable);
    co_return value;
}

// A failure as a status, by its class (redlock::condition), or by the error itself for those of no class.
response failure(const redlock::error_code& ec)
{
    auto status = http::status::internal_server_error;  // also for an error reply or a counter that is not a number
    if (ec == redlock::condition::not_acquired)
        // The nodes answered, but other requests held the counter for the whole wait: an answer, not a fault.
        // Nothing changed; the client may retry.
        status = http::status::conflict;
    else if (ec == redlock::condition::connection || ec == redlock::condition::timeout)
        // No quorum of lock nodes, or not the store, answered in time: the service is down, not the request wrong.
        // (A write cut off this way may have landed: for exactly-once, see http_inventory's Idempotency-Key.)
        status = http::status::service_unavailable;
    else if (ec == redlock::error::stale_token)
        // A holder with a newer token wrote first: this request's lease had ended (it stalled past it), and its claim
        // or its write was refused. Nothing changed, as with a busy lock.
        status = http::status::conflict;
    else if (ec == redlock::error::lost)
        // The lease was lost while the body ran (no quorum extended it in time) and the body was cancelled,
        // perhaps after its write was sent: the outcome is unknown, and a retry may count twice.
        status = http::status::internal_server_error;
    response res = reply(status, ec.message());
    if (status == http::status::service_unavailable) res.set(http::field::retry_after, "1");
    return res;
}

asio::awaitable<response> handle(redlock::client& locks, const redlock::redis& store,
                                 const http::request<http::string_body>& req)
{
    redlock::error_code ec;
    try {
        if (auto name = counter_name(req.target(), "/increment"); !name.empty() && req.method() == http::verb::post) {
            // with_lock turns the watchdog on: a slow store cannot outlive the lease, and losing it cancels the body.
            redlock::mutex lock(locks, "counter:" + name, {.ttl = 5s, .wait = 2s, .fencing = true});
            auto body = [&store, name](const redlock::lease& held) {
                return add_one(store, name, held.fencing_token());
            };
            co_return reply(http::status::ok, std::to_string(co_await redlock::with_lock(lock, body)));
        }
        if (auto name = counter_name(req.target(), ""); !name.empty() && req.method() == http::verb::get) {
            const std::string value_key = "{counter:" + name + "}:value";
            co_return reply(http::status::ok, std::to_string(co_await read_value(store, value_key)));
        }
        co_return reply(http::status::not_found, "POST /counter/{name}/increment or GET /counter/{name}");
    } catch (const boost::system::system_error& e) {
        ec = e.code();
    }
    co_return failure(ec);
}

// One connection, as Beast's do_session: read a request, answer it, again while the client keeps it alive.
asio::awaitable<void> session(beast::tcp_stream stream, redlock::client& locks, const redlock::redis& store)
{
    beast::flat_buffer buffer;
    for (;;) {
        // One deadline for reading a request, handling it (at most the lock's wait and three store requests) and
        // writing the answer; a kept-alive connection idle that long is closed.
        stream.expires_after(30s);
        http::request<http::string_body> req;
        auto [read_ec, read] = co_await http::async_read(stream, buffer, req, use_tuple);
        if (read_ec) break;  // the client closed, or timed out, or did not speak HTTP
        response res = co_await handle(locks, store, req);
        res.version(req.version());
        res.keep_alive(req.keep_alive());
        auto [write_ec, written] = co_await http::async_write(stream, res, use_tuple);
        if (write_ec || !res.keep_alive()) break;
    }
    beast::error_code ignored;
    stream.socket().shutdown(asio::ip::tcp::socket::shutdown_send, ignored);
}

asio::awaitable<void> listen(redlock::client& locks, const redlock::redis& store, std::uint16_t port)
{
    co_await locks.async_connect(asio::use_awaitable);  // a quorum of the lock nodes
    co_await store.async_connect(asio::use_awaitable);
    auto executor = co_await asio::this_coro::executor;
    asio::ip::tcp::acceptor acceptor(executor, {asio::ip::make_address("127.0.0.1"), port});
    std::cout << "listening on 127.0.0.1:" << acceptor.local_endpoint().port() << std::endl;
    for (;;) {
        beast::tcp_stream stream(co_await acceptor.async_accept(asio::use_awaitable));
        asio::co_spawn(executor, session(std::move(stream), locks, store), [](std::exception_ptr e) {
            try {
                if (e) std::rethrow_exception(e);
            } catch (const std::exception& ex) {
                std::cerr << "session: " << ex.what() << "\n";
            }
        });
    }
}

int main(int argc, char** argv)
{
    try {
        const auto nodes = node_list(argc, argv);
        const unsigned long port = argc > 2 ? std::stoul(argv[2]) : 8080;
        if (nodes.empty() || port > 65535) throw std::invalid_argument("usage: http_counter [URL,URL,... [PORT]]");
        asio::io_context ctx;
        redlock::client locks(ctx.get_executor(), nodes);
        redlock::redis store(ctx.get_executor(), nodes.front());
        asio::co_spawn(ctx, listen(locks, store, static_cast<std::uint16_t>(port)), [](std::exception_ptr e) {
            if (e) std::rethrow_exception(e);
        });
        ctx.run();
    } catch (const std::exception& e) {
        std::cerr << "http_counter: " << e.what() << "\n";
        return 1;
    }
}
