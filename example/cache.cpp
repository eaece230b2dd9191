// The cache guard in front of a slow "database": concurrent misses load once, a hit is one GET, a user that does
// not exist is remembered as a null marker, and a Bloom filter of known users turns strangers away before any
// lock or load.
// Usage: redlock_example_cache [URL,URL,...]
// The lock node URLs come from the argument, else from $REDLOCK_NODES (comma-separated), else
// redis://127.0.0.1:6379. The values are kept on the first node (in practice, your cache's Redis).
#if defined(__GNUC__) && !defined(__clang__)
// g++ 12 pairs the aligned_alloc of an Asio coroutine frame with the frame's own operator delete (which frees
// it correctly) and reports -Wmismatched-new-delete, for some frames only, as its inlining decides.
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif

#include <redlock/redlock.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <chrono>
#include <cstdlib>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace asio = boost::asio;
using namespace std::chrono_literals;

std::vector<redlock::node_config> node_list(int argc, char** argv)
{
    const char* env = std::getenv("REDLOCK_NODES");
    return redlock::parse_node_list(argc > 1 ? argv[1] : env && *env ? env : "redis://127.0.0.1:6379");
}

// The slow source: 50 ms a query, and it counts them.
struct database {
    std::map<std::string, std::string> users{{"ada", "Ada Lovelace"}, {"alan", "Alan Turing"}};
    int queries = 0;
};

asio::awaitable<std::optional<std::string>> load_user(std::shared_ptr<database> db, std::string id)
{
    ++db->queries;
    asio::steady_timer slow(co_await asio::this_coro::executor, 50ms);
    co_await slow.async_wait(asio::use_awaitable);
    auto it = db->users.find(id);
    if (it == db->users.end()) co_return std::nullopt;
    co_return it->second;
}

// What the demo claims, checked: a wrong count is an error (exit 1), not just a line of output.
void expect_queries(const database& db, int expected, const std::string& after)
{
    if (db.queries == expected) return;
    throw std::runtime_error(std::to_string(db.queries) + " database queries after " + after + ", expected " +
                             std::to_string(expected));
}

// One caller's read of a user, and what it cost the database so far.
asio::awaitable<void> show_user(redlock::cache_guard cache, std::shared_ptr<database> db, std::string id)
{
    redlock::cache_loader load = [db, id] { return load_user(db, id); };
    auto user = co_await cache.async_get_or_load("user:" + id, load, asio::use_awaitable);
    std::cout << "user:" << id << " -> " << user.value_or("(no such user)") << ", " << db->queries
              << " database queries so far\n";
}

// An earlier run's values (kept for 10 minutes) would turn this run's misses into hits: start without them. A command
// of our own on the store (its keys span hash slots, which one server runs; a Cluster would need a request per key).
asio::awaitable<void> forget_earlier_runs(const redlock::redis& store)
{
    redlock::request del;
    del.push("DEL", "user:ada", "user:alan", "user:nobody", "user:mallory");
    redlock::response deleted;
    co_await store.async_exec(del, deleted, asio::use_awaitable);
}

asio::awaitable<void> demo(redlock::client& locks, redlock::redis store)
{
    co_await locks.async_connect(asio::use_awaitable);
    co_await forget_earlier_runs(store);
    auto db = std::make_shared<database>();

    // [get-or-load]
    redlock::cache_guard cache(locks, store, {.ttl = 10min, .soft_ttl = 8min, .null_ttl = 30s});
    const std::string id = "ada";
    redlock::cache_loader load = [db, id] { return load_user(db, id); };  // awaitable<optional<string>>
    auto user = co_await cache.async_get_or_load("user:" + id, load, asio::use_awaitable);  // nullopt: no such user
    // [get-or-load]
    std::cout << "user:ada -> " << user.value_or("(no such user)") << " (a miss: " << db->queries << " query)\n";
    expect_queries(*db, 1, "the first miss");

    // Ten callers at once ask for a user nobody has read yet: they share one load (copies of a guard share
    // its table of loads).
    const auto ex = co_await asio::this_coro::executor;
    const std::string alan = "alan", nobody = "nobody";  // named: g++ 12 mishandles temporaries in co_await
    auto report = [](std::exception_ptr e) {
        if (e) std::rethrow_exception(e);
    };
    for (int i = 0; i < 10; ++i) asio::co_spawn(ex, show_user(cache, db, alan), report);
    asio::steady_timer later(ex, 300ms);
    co_await later.async_wait(asio::use_awaitable);
    expect_queries(*db, 2, "ten concurrent misses of one user");
    co_await show_user(cache, db, alan);  // a hit: no query
    expect_queries(*db, 2, "a hit");
    co_await show_user(cache, db, nobody);  // a miss that finds nothing: cached as a null marker
    expect_queries(*db, 3, "a miss of a user that does not exist");
    co_await show_user(cache, db, nobody);  // the marker answers: no query
    expect_queries(*db, 3, "a null marker's hit");

    redlock::cache_options options{.ttl = 10min};
    // [bloom]
    redlock::bloom_filter known(store, "users:known", 1'000'000, 0.01);  // 9.6 million bits (1.2 MB), 7 hashes
    std::vector<std::string> created{"user:ada", "user:alan"};           // add each user as it is created
    co_await known.async_add(created, asio::use_awaitable);
    redlock::cache_guard guarded(locks, store, known, options);
    // [bloom]
    const int before = db->queries;
    const std::string mallory = "mallory";
    redlock::cache_loader stranger_load = [db, mallory] { return load_user(db, mallory); };
    auto stranger = co_await guarded.async_get_or_load("user:mallory", stranger_load, asio::use_awaitable);
    std::cout << "user:mallory -> " << stranger.value_or("(no such user)") << ", " << db->queries - before
              << " database queries (the Bloom filter answered)\n";
    expect_queries(*db, before, "a key the Bloom filter does not contain");
    if (user != "Ada Lovelace" || stranger) throw std::runtime_error("wrong values");
}

int main(int argc, char** argv)
{
    try {
        asio::io_context ctx;
        const auto nodes = node_list(argc, argv);
        // [guard-parts]
        redlock::client locks(ctx.get_executor(), nodes);         // the rebuild locks: 1 or N nodes
        redlock::redis store(ctx.get_executor(), nodes.front());  // the values: one Redis
        // [guard-parts]
        std::exception_ptr failure;
        asio::co_spawn(ctx, demo(locks, store), [&](std::exception_ptr e) {
            failure = e;
            locks.close();  // the connections would otherwise keep ctx.run() going
            store.close();
        });
        ctx.run();
        if (failure) std::rethrow_exception(failure);
        return 0;
    } catch (const std::exception& e) {
        std::cerr << "error: " << e.what() << "\n";
        return 1;
    }
}
