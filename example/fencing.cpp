// Kleppmann's scenario, fenced: holder A takes a short lease and stalls past its expiry; B takes the lock and
// writes the report; A wakes up and writes too, and the resource refuses A's write because its fencing token
// is older than B's.
// Usage: redlock_example_fencing [URL,URL,...]
// The lock node URLs come from the argument, else from $REDLOCK_NODES (comma-separated), else
// redis://127.0.0.1:6379. The report is kept on the first node (in practice, any Redis of yours).
#include <redlock/redlock.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <chrono>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

namespace asio = boost::asio;
using namespace std::chrono_literals;
constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);

std::vector<redlock::node_config> node_list(int argc, char** argv)
{
    const char* env = std::getenv("REDLOCK_NODES");
    return redlock::parse_node_list(argc > 1 ? argv[1] : env && *env ? env : "redis://127.0.0.1:6379");
}

asio::awaitable<void> stall(std::chrono::milliseconds d)
{
    asio::steady_timer timer(co_await asio::this_coro::executor, d);
    co_await timer.async_wait(use_tuple);
}

// Writes the report only if no newer holder has written it: the guard key keeps the highest token accepted.
asio::awaitable<bool> write_report(const redlock::redis& store, std::uint64_t fencing_token, const std::string& text)
{
    redlock::fenced_write w("{report:2026-11}:guard", fencing_token);
    w.command("SET", "{report:2026-11}:body", {text});
    auto [ec, newest] = co_await redlock::async_fenced_write(store, w, use_tuple);
    if (ec == redlock::error::stale_token) {
        std::cout << "  token " << fencing_token << " refused: token " << newest << " has written; stop\n";
        co_return false;
    }
    if (ec) throw std::system_error(ec);
    std::cout << "  token " << fencing_token << " wrote \"" << text << "\"\n";
    co_return true;
}

// [using-it]
asio::awaitable<void> fenced_report(redlock::client& client, const redlock::redis& store, std::string text,
                                    std::string now)
{
    redlock::mutex report_lock(client, "report:2026-11", {.ttl = 30s, .watchdog = true, .fencing = true});
    auto held = co_await report_lock.async_lock(asio::use_awaitable);
    std::uint64_t token = held.fencing_token();  // 1, 2, 3, ... over the successive holders

    // The resource, here a Redis that is not one of the lock nodes:
    redlock::fenced_write write("{report:2026-11}:guard", token);
    write.command("SET", "{report:2026-11}:body", {text}).command("HSET", "{report:2026-11}:meta", {"written_at", now});
    auto [ec, resource_token] = co_await redlock::async_fenced_write(store, write, use_tuple);
    if (ec == redlock::error::stale_token) {
        // A newer holder (token resource_token) has written: this process lost the lock long ago. Stop.
        throw std::runtime_error("fenced out by token " + std::to_string(resource_token));
    }
    co_await held.async_release(asio::use_awaitable);
    std::cout << "token " << token << " wrote the report and its metadata\n";
}
// [using-it]

// [fenced-set]
// Sets `key` to `value` for an hour, unless a holder with a newer token than `token` has written.
asio::awaitable<bool> fenced_set(const redlock::redis& store, std::string guard_key, std::uint64_t token,
                                 std::string key, std::string value)
{
    redlock::fenced_write w(guard_key, token);
    w.command("SET", key, {value});  // any command that writes one key: SET, HSET, DEL, LPUSH, XADD...
    w.command("EXPIRE", key, {3600});
    auto [ec, resource_token] = co_await redlock::async_fenced_write(store, w, use_tuple);
    if (ec && ec != redlock::error::stale_token) throw boost::system::system_error(ec);
    std::cout << "fenced_set with token " << token
              << (ec ? ": refused, the guard holds " : ": written, the guard holds ") << resource_token << "\n";
    co_return !ec;
}
// [fenced-set]

// Returns A's fencing token, stale by then.
asio::awaitable<std::uint64_t> run(redlock::client& a, redlock::client& b, const redlock::redis& store)
{
    co_await a.async_connect(asio::use_awaitable);
    co_await b.async_connect(asio::use_awaitable);
    co_await store.async_connect(asio::use_awaitable);
    std::cout << "lock on " << a.size() << " node(s), quorum " << a.quorum() << "\n";

    const redlock::lock_options fenced{.ttl = 500ms, .fencing = true};
    redlock::mutex lock_a(a, "report:2026-11", fenced);
    auto lease_a = co_await lock_a.async_lock(asio::use_awaitable);
    std::cout << "A holds the lock, fencing token " << lease_a.fencing_token() << ", then stalls for 1 s\n";
    co_await stall(1s);  // past its 500 ms TTL, without a watchdog: a GC pause, a stopped process

    redlock::mutex lock_b(b, "report:2026-11", {.ttl = 10s, .fencing = true});
    auto lease_b = co_await lock_b.async_lock(asio::use_awaitable);
    std::cout << "B holds the lock, fencing token " << lease_b.fencing_token() << "\n";
    co_await write_report(store, lease_b.fencing_token(), "written by B");

    std::cout << "A wakes up, still believing it holds the lock:\n";
    const bool a_wrote = co_await write_report(store, lease_a.fencing_token(), "written by A");
    co_await lease_b.async_release(use_tuple);
    co_await lease_a.async_release(use_tuple);  // error::lost: A's lease had expired
    std::cout << (a_wrote ? "FAILED: the stale holder overwrote the report\n"
                          : "the report is B's: the stale holder was fenced out\n");
    if (a_wrote) std::exit(1);
    co_return lease_a.fencing_token();
}

// The same protocol again, as doc/fencing.md shows it: a fenced report with its metadata, then A's stale token.
asio::awaitable<void> as_documented(redlock::client& client, const redlock::redis& store, std::uint64_t stale_token)
{
    const std::string text = "the November report", now = "2026-12-01T00:00:00Z";
    co_await fenced_report(client, store, text, now);
    const std::string guard = "{report:2026-11}:guard", body = "{report:2026-11}:body", value = "stale";
    if (co_await fenced_set(store, guard, stale_token, body, value)) std::exit(1);
}

int main(int argc, char** argv)
{
    try {
        auto nodes = node_list(argc, argv);
        asio::io_context ctx;
        redlock::client a(ctx.get_executor(), nodes);
        redlock::client b(ctx.get_executor(), nodes);
        redlock::redis store(ctx.get_executor(), nodes.front());
        asio::co_spawn(
            ctx,
            [&]() -> asio::awaitable<void> {
                const std::uint64_t stale_token = co_await run(a, b, store);
                co_await as_documented(a, store, stale_token);
            },
            [&](std::exception_ptr e) {
                a.close();
                b.close();
                store.close();
                if (e) std::rethrow_exception(e);
            });
        ctx.run();
    } catch (const std::exception& e) {
        std::cerr << "fencing: " << e.what() << "\n";
        return 1;
    }
}
