// Connects to one Redis node, runs a pipeline, then shows many concurrent requests sharing few writes; then the rest
// of doc/connection.md: a URL, a connection's diagnostics, requests, a script, a subscription and its pushes.
// Usage: redlock_example_quickstart [redis://127.0.0.1:6379]
#include <redlock/redlock.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <chrono>
#include <iostream>
#include <string>
#include <string_view>
#include <vector>

namespace asio = boost::asio;

// [readme]
asio::awaitable<void> quickstart(redlock::connection& conn)
{
    co_await conn.async_connect(asio::use_awaitable);  // HELLO 3, AUTH, SELECT as the URL says
    redlock::request req;
    req.push("SET", "greeting", "hello", "PX", 60000);
    req.push("GET", "greeting");
    redlock::response resp;
    co_await conn.async_exec(req, resp, asio::use_awaitable);  // one write, two replies
    std::cout << "GET greeting -> " << resp[1].text << "\n";
}
// [readme]

// 10,000 concurrent requests from callbacks: the connection coalesces them into a handful of writes.
asio::awaitable<void> concurrent(redlock::connection& conn)
{
    constexpr int count = 10'000;
    std::vector<redlock::request> requests(count);
    int done = 0, failed = 0;
    const auto before = conn.get_usage();
    const auto start = std::chrono::steady_clock::now();
    for (auto& r : requests) {
        r.push("INCR", "quickstart:counter");
        conn.async_exec(r, [&](redlock::error_code ec) {
            ++done;
            if (ec) ++failed;
        });
    }
    asio::steady_timer poll(co_await asio::this_coro::executor);
    while (done < count) {
        poll.expires_after(std::chrono::milliseconds(1));
        co_await poll.async_wait(asio::use_awaitable);
    }
    const auto elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const auto after = conn.get_usage();
    std::cout << count << " concurrent INCRs: " << failed << " failed, " << (after.writes - before.writes)
              << " socket writes, " << static_cast<long>(count / elapsed) << " requests/s\n";
    if (failed) throw std::runtime_error("some requests failed");
}

// [url]
void parse()
{
    redlock::node_config config = redlock::parse_url("redis://user:password@10.0.0.5:6379/2");
    std::cout << "parsed " << config.to_string() << ": user " << config.username << ", db " << config.db << "\n";
}
// [url]

// [url-list]
void parse_list()
{
    // Commas and/or spaces between URLs, as $REDLOCK_NODES or the CLI's --nodes spells a list.
    std::vector<redlock::node_config> nodes =
        redlock::parse_node_list("redis://10.0.0.1:6379, redis://10.0.0.2:6379,redis://10.0.0.3:6379");
    std::cout << "parsed a list of " << nodes.size() << " nodes, the last " << nodes.back().to_string() << "\n";
}
// [url-list]

// [connect]
asio::awaitable<void> connect_verbosely(asio::io_context& ctx, redlock::node_config config)
{
    redlock::connection conn(ctx.get_executor(), config);
    redlock::diagnostics diag;
    auto [ec] = co_await conn.async_connect(diag, asio::as_tuple(asio::use_awaitable));
    if (ec) std::cerr << ec.message() << ": " << diag.message() << "\n";
    std::cout << "connected to " << redlock::to_string(conn.server()) << "\n";  // "redis 7.0.15", "valkey 8.0.1"
}
// [connect]

// [requests]
asio::awaitable<void> requests(redlock::connection& conn)
{
    const std::string key = "quickstart:lock", token = "f81d4fae";
    const std::vector<std::string> keys{"quickstart:a", "quickstart:b"};
    redlock::request req;
    req.push("SET", key, token, "NX", "PX", 30000);   // strings and integers
    req.push_range("DEL", keys);                      // arguments from a range
    req.set_timeout(std::chrono::milliseconds(500));  // this request's deadline
    redlock::response resp;                           // std::vector<redlock::resp::value>
    co_await conn.async_exec(req, resp, asio::use_awaitable);
    std::cout << "SET -> " << redlock::resp::to_string(resp[0]) << ", DEL -> " << redlock::resp::to_string(resp[1])
              << "\n";

    req.clear();
    static const redlock::script unlock(R"(if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1]) else return 0 end)");
    req.push_script(unlock, {key}, {token});
    co_await conn.async_exec(req, resp, asio::use_awaitable);  // EVALSHA, and EVAL if the node lacks the script
    std::cout << "unlock -> " << redlock::resp::to_string(resp[0]) << "\n";
}
// [requests]

// [subscribe]
asio::awaitable<void> subscribe(redlock::connection& conn)
{
    conn.set_subscription_lost_handler([](std::vector<std::string> channels) {
        // on the connection's strand; must not block: a Cluster slot moved, subscribe them where it went
        std::cout << "lost " << channels.size() << " channel(s), the first " << channels.front() << "\n";
    });
    conn.set_push_handler([](const redlock::resp::value& push) { std::cout << "push " << to_string(push) << "\n"; });
    conn.set_message_handler([](std::string_view channel, std::string_view payload) {
        std::cout << "message on " << channel << ": " << payload << "\n";  // on the connection's strand; must not block
    });
    std::vector<std::string> channels{"lock:orders"};
    redlock::diagnostics diag;
    auto [ec] = co_await conn.async_subscribe(channels, diag, asio::as_tuple(asio::use_awaitable));
    if (ec == redlock::error::server_error) std::cerr << diag.server_message() << "\n";  // NOPERM ...
    redlock::request publish;
    // Redis 7 and Valkey subscribe sharded channels, which SPUBLISH reaches; Redis 6.x classic ones (PUBLISH).
    const char* command = conn.server().has_sharded_pubsub() ? "SPUBLISH" : "PUBLISH";
    publish.push(command, "lock:orders", "order 42 released");  // on the same connection: RESP3 allows it
    co_await conn.async_exec(publish, asio::use_awaitable);
    co_await conn.async_unsubscribe(channels, asio::use_awaitable);
}
// [subscribe]

int main(int argc, char** argv)
{
    try {
        asio::io_context ctx;
        redlock::connection conn(ctx.get_executor(), redlock::parse_url(argc > 1 ? argv[1] : "redis://127.0.0.1:6379"));
        asio::co_spawn(
            ctx,
            [&]() -> asio::awaitable<void> {
                co_await quickstart(conn);
                co_await concurrent(conn);
                parse();
                parse_list();
                co_await connect_verbosely(ctx, conn.config());
                co_await requests(conn);
                co_await subscribe(conn);
            },
            [&](std::exception_ptr e) {
                conn.close();
                if (e) std::rethrow_exception(e);
            });
        ctx.run();
        return 0;
    } catch (const std::exception& e) {
        std::cerr << "quickstart: " << e.what() << "\n";
        return 1;
    }
}
