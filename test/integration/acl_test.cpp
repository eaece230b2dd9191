// The least-privilege ACL user of doc/operations.md, created on real nodes: with exactly the commands, key patterns
// and channel pattern that page lists, every primitive works on keys under `app:` (a lock with fencing over 1 and
// 3 nodes, waiting woken by a release message, a fair lock with a queued waiter, a reentrant lock, inspection, a
// counting and a fair semaphore, every rate limiter strategy, the cache guard and a Bloom filter), nothing falls
// back, and nothing is logged as refused. Without the channel pattern, waiters lose their wake-ups.
#include <redlock/redlock.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <common/run_coro.hpp>
#include <common/servers/redis_node.hpp>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace asio = boost::asio;
namespace data = boost::unit_test::data;
using namespace std::chrono_literals;
using redlock::test::cluster;
using redlock::test::run_coro;
constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);

namespace {

// doc/operations.md, "ACLs": the rights of a user whose lock, semaphore, limiter and cache names start with `app:`,
// on Redis 7 (sharded pub/sub: SSUBSCRIBE, SUNSUBSCRIBE, SPUBLISH in the scripts).
const std::vector<std::string> app_user{"on",
                                        ">pw",
                                        "resetkeys",
                                        "~app:*",
                                        "~{app:*",
                                        "resetchannels",
                                        "&{app:*",
                                        "-@all",
                                        "+ping",
                                        "+client|tracking",
                                        "+evalsha",
                                        "+eval",
                                        "+script|load",
                                        "+ssubscribe",
                                        "+sunsubscribe",
                                        "+get",
                                        "+set",
                                        "+del",
                                        "+exists",
                                        "+pttl",
                                        "+pexpire",
                                        "+incr",
                                        "+incrby",
                                        "+spublish",
                                        "+time",
                                        "+zadd",
                                        "+zrange",
                                        "+zrangebyscore",
                                        "+zrem",
                                        "+zremrangebyscore",
                                        "+zscore",
                                        "+zcard",
                                        "+hget",
                                        "+hset",
                                        "+hsetnx",
                                        "+hdel",
                                        "+hlen",
                                        "+hexists",
                                        "+hincrby",
                                        "+hgetall",
                                        "+getbit",
                                        "+setbit"};

// doc/operations.md, "ACLs": a read-only user for `redlock status` and dashboards (async_inspect).
const std::vector<std::string> viewer_user{"on",     ">pw",   "resetkeys", "%R~app:*", "%R~{app:*", "resetchannels",
                                           "-@all",  "+ping", "+get",      "+pttl",    "+zrange",   "+hgetall",
                                           "+zcard", "+time"};

void create_user(cluster& nodes, std::vector<std::string> rights, const std::string& name = "app")
{
    for (std::size_t i = 0; i < nodes.size(); ++i) {
        std::vector<std::string> command{"ACL", "SETUSER", name};
        command.insert(command.end(), rights.begin(), rights.end());
        BOOST_REQUIRE_EQUAL(nodes[i].cli(command), "OK");
    }
}

std::vector<redlock::node_config> as_app(const cluster& nodes, std::size_t count, const std::string& user = "app")
{
    std::vector<redlock::node_config> out;
    for (std::size_t i = 0; i < count; ++i) {
        auto c = redlock::parse_url(nodes[i].url());
        c.username = user;
        c.password = "pw";
        c.health_check_interval = 100ms;  // so that the test sees the health check's PING
        out.push_back(c);
    }
    return out;
}

asio::awaitable<void> sleep_for(std::chrono::milliseconds d)
{
    asio::steady_timer t(co_await asio::this_coro::executor, d);
    co_await t.async_wait(use_tuple);
}

// What the library logged at warning or above: a refused subscription, a lost lease.
struct log_sink {
    std::shared_ptr<std::vector<std::string>> warnings = std::make_shared<std::vector<std::string>>();
    void attach(redlock::client& c) const
    {
        c.set_log_handler([w = warnings](redlock::log_level level, std::string_view message) {
            if (level >= redlock::log_level::warning) w->emplace_back(message);
        });
    }
};

void require_ok(redlock::error_code ec, const redlock::diagnostics& diag, const std::string& what)
{
    std::string per_node;
    for (const auto& n : diag.nodes()) per_node += " [" + n.node + ": " + n.message + "]";
    BOOST_REQUIRE_MESSAGE(!ec, what << ": " << ec.message() << ": " << diag.message() << per_node);
}

// Holds `m` for `hold`, then releases it.
asio::awaitable<void> hold_then_release(redlock::lease held, std::chrono::milliseconds hold)
{
    co_await sleep_for(hold);
    co_await held.async_release(use_tuple);
}

// A lock taken by `first` while `second` waits for it: the waiter must be woken by the release message.
asio::awaitable<redlock::wait_summary> handoff(redlock::client& first, redlock::client& second, std::string key,
                                               redlock::lock_options options)
{
    redlock::diagnostics diag;
    redlock::mutex holder(first, key, options);
    auto [ec, held] = co_await holder.async_lock(diag, use_tuple);
    require_ok(ec, diag, "the holder's lock of " + key);
    asio::co_spawn(co_await asio::this_coro::executor, hold_then_release(std::move(held), 300ms), asio::detached);
    redlock::mutex waiter(second, key, options);
    auto [wait_ec, next] = co_await waiter.async_lock(diag, use_tuple);
    require_ok(wait_ec, diag, "the waiter's lock of " + key);
    co_await next.async_release(use_tuple);
    co_return diag.waiting();
}

}  // namespace

BOOST_AUTO_TEST_CASE(the_documented_acl_user_runs_every_primitive)
{
    cluster nodes(3);
    create_user(nodes, app_user);
    asio::io_context ctx;
    redlock::client one(ctx.get_executor(), as_app(nodes, 1));
    redlock::client three(ctx.get_executor(), as_app(nodes, 3));
    redlock::client other(ctx.get_executor(), as_app(nodes, 3));  // another process
    log_sink log;
    for (auto* c : {&one, &three, &other}) log.attach(*c);

    run_coro(ctx, [&]() -> asio::awaitable<void> {
        redlock::diagnostics diag;
        for (auto* c : {&one, &three, &other}) {
            auto [ec] = co_await c->async_connect(diag, use_tuple);
            require_ok(ec, diag, "connect");
        }

        // A lock with fencing and the watchdog, on one node (SET NX GET, then INCR in the acquire) and on three
        // (the fence commit); extended, inspected, released.
        for (auto* c : {&one, &three}) {
            redlock::mutex m(*c, "app:report", {.ttl = 2s, .watchdog = true, .fencing = true});
            auto [ec, held] = co_await m.async_lock(diag, use_tuple);
            require_ok(ec, diag, "lock with fencing");
            BOOST_TEST(held.fencing_token() > 0u);
            auto [extend_ec] = co_await held.async_extend(diag, use_tuple);
            require_ok(extend_ec, diag, "extend");
            auto [inspect_ec, seen] = co_await m.async_inspect(diag, use_tuple);
            require_ok(inspect_ec, diag, "inspect");
            BOOST_TEST(seen.holder().value_or("") == held.token());
            BOOST_TEST(seen.highest_fence() == held.fencing_token());
            auto [release_ec] = co_await held.async_release(diag, use_tuple);
            require_ok(release_ec, diag, "release");
        }
        // A plain one-key lock without fencing on one node: the SET NX GET acquire, not the script.
        {
            redlock::mutex m(one, "app:plain", {.ttl = 2s});
            auto [ec, held] = co_await m.async_lock(diag, use_tuple);
            require_ok(ec, diag, "plain lock");
            co_await held.async_release(use_tuple);
        }

        // Waiting: the waiter subscribes to {app:...}:released and is woken by the holder's PUBLISH. (Arguments
        // named before the co_await: g++ 12 may destroy a temporary in a co_await expression twice.)
        const std::string handoff_key = "app:handoff", batch_key = "app:batch";
        const redlock::lock_options plain_options{.ttl = 5s, .wait = 4s},
            fair_options{.ttl = 5s, .wait = 4s, .fair = true};
        const auto plain = co_await handoff(three, other, handoff_key, plain_options);
        BOOST_TEST(plain.notified);
        BOOST_TEST(plain.woken_by_release >= 1u);
        BOOST_TEST(plain.timed_retries == 0u);

        // A fair lock with a queued waiter (tickets, the queue, heartbeats), over three nodes.
        const auto fair = co_await handoff(three, other, batch_key, fair_options);
        BOOST_TEST(fair.notified);

        // A reentrant lock.
        {
            auto mine = redlock::mutex(three, "app:order:42", {.ttl = 2s, .fencing = true}).owned_by("request-1");
            auto [ec, outer] = co_await mine.async_lock(diag, use_tuple);
            require_ok(ec, diag, "reentrant lock");
            auto [again_ec, inner] = co_await mine.async_lock(diag, use_tuple);
            require_ok(again_ec, diag, "reentrant lock, again");
            BOOST_TEST(inner.fencing_token() == outer.fencing_token());
            co_await inner.async_release(use_tuple);
            auto [release_ec] = co_await outer.async_release(diag, use_tuple);
            require_ok(release_ec, diag, "reentrant release");
        }

        // A counting semaphore and a fair one: acquire, extend, inspect, set_limit, release.
        for (bool fair_semaphore : {false, true}) {
            redlock::semaphore s(three, fair_semaphore ? "app:exports:fair" : "app:exports", 2,
                                 {.ttl = 2s, .wait = 2s, .fair = fair_semaphore});
            auto [ec, permit] = co_await s.async_acquire(1, diag, use_tuple);
            require_ok(ec, diag, "semaphore acquire");
            auto [extend_ec, left] = co_await permit.async_extend(diag, use_tuple);
            require_ok(extend_ec, diag, "permit extend");
            auto [inspect_ec, seen] = co_await s.async_inspect(diag, use_tuple);
            require_ok(inspect_ec, diag, "semaphore inspect");
            BOOST_TEST(seen.holders().size() == 1u);
            auto [limit_ec] = co_await s.async_set_limit(3, diag, use_tuple);
            require_ok(limit_ec, diag, "set_limit");
            auto [release_ec] = co_await permit.async_release(diag, use_tuple);
            require_ok(release_ec, diag, "permit release");
        }

        // One Redis deployment (the first node) for the rate limiter, the cache's values and its Bloom filter.
        redlock::redis store(ctx.get_executor(), as_app(nodes, 1)[0]);

        // The rate limiter, each strategy.
        for (auto strategy : {redlock::rate_strategy::gcra, redlock::rate_strategy::fixed_window,
                              redlock::rate_strategy::sliding_window}) {
            redlock::rate_limiter limiter(store, "app:api:" + std::to_string(static_cast<int>(strategy)),
                                          {.strategy = strategy, .rate = 5, .period = 1s});
            for (int call = 0; call < 2; ++call) {  // the second call reads the state the first one left
                auto [ec, decision] = co_await limiter.async_acquire(1, diag, use_tuple);
                require_ok(ec, diag, "rate decision");
                BOOST_TEST(decision.allowed());
            }
        }

        // The cache guard (its rebuild lock on the three nodes, values on the first) and a Bloom filter.
        {
            redlock::bloom_filter known(store, "app:users:known", 1000, 0.01);
            const std::vector<std::string> created{"app:user:ada"};
            auto [add_ec, added] = co_await known.async_add(created, use_tuple);
            BOOST_REQUIRE_MESSAGE(!add_ec, "bloom add: " << add_ec.message());
            redlock::cache_guard cache(three, store, known, {.ttl = 10s});
            redlock::cache_loader load = []() -> asio::awaitable<std::optional<std::string>> { co_return "Ada"; };
            const std::string key = "app:user:ada";
            auto [ec, value] = co_await cache.async_get_or_load(key, load, cache.options(), diag, use_tuple);
            require_ok(ec, diag, "cache load");
            BOOST_TEST(value.value_or("") == "Ada");
            auto [hit_ec, hit] = co_await cache.async_get_or_load(key, load, cache.options(), diag, use_tuple);
            require_ok(hit_ec, diag, "cache hit");
            BOOST_TEST(hit.value_or("") == "Ada");
            store.close();
        }

        // After SCRIPT FLUSH (a restart does the same) the scripts are sent again with EVAL.
        for (std::size_t i = 0; i < nodes.size(); ++i) nodes[i].cli({"SCRIPT", "FLUSH"});
        {
            redlock::mutex m(three, "app:report", {.ttl = 2s, .fencing = true});
            auto [ec, held] = co_await m.async_lock(diag, use_tuple);
            require_ok(ec, diag, "lock after SCRIPT FLUSH");
            co_await held.async_release(use_tuple);
        }
        // Idle: health-check PINGs, and the release channels unsubscribed 2 s after their last waiter.
        co_await sleep_for(2500ms);
        for (auto* c : {&one, &three, &other}) c->close();
    });
    for (const auto& w : *log.warnings) BOOST_ERROR("logged: " << w);
    // No command, key or channel was denied anywhere, in a script (a PUBLISH under pcall) or out of one.
    for (std::size_t i = 0; i < nodes.size(); ++i)
        BOOST_TEST(nodes[i].cli({"ACL", "LOG"}) == "", nodes[i].cli({"ACL", "LOG"}));
}

// The same user without the channel pattern: waiters cannot subscribe to release messages, fall back to timed
// retries, and the library logs why. The lock stays exact; only the wake-up is lost, unless client tracking tells the
// waiter that the holder's key went (`client|tracking` kept): then it is woken all the same.
BOOST_DATA_TEST_CASE(without_the_channel_pattern_waiters_lose_their_wake_ups_but_to_tracking, data::make({false, true}),
                     tracking)
{
    cluster nodes(3);
    auto rights = app_user;
    std::erase(rights, "&{app:*");
    if (!tracking) std::erase(rights, "+client|tracking");
    create_user(nodes, rights);
    asio::io_context ctx;
    redlock::client first(ctx.get_executor(), as_app(nodes, 3));
    redlock::client second(ctx.get_executor(), as_app(nodes, 3));
    log_sink log;
    log.attach(second);
    run_coro(ctx, [&]() -> asio::awaitable<void> {
        co_await first.async_connect(asio::use_awaitable);
        co_await second.async_connect(asio::use_awaitable);
        const std::string key = "app:handoff";
        const redlock::lock_options options{.ttl = 1s, .wait = 4s};
        const auto waited = co_await handoff(first, second, key, options);
        BOOST_TEST(!waited.notified);
        if (tracking)
            BOOST_TEST(waited.woken_by_release >= 1u);  // the release's DEL, as client tracking reported it
        else
            BOOST_TEST(waited.woken_by_release == 0u);
        first.close();
        second.close();
    });
    BOOST_TEST(!log.warnings->empty());
    BOOST_TEST(nodes[0].cli({"ACL", "LOG"}).find("channel") != std::string::npos);
    if (!log.warnings->empty()) BOOST_TEST(log.warnings->front().find("NOPERM") != std::string::npos);
}

// The read-only user reads a lock and a semaphore on every node (GET, PTTL; ZRANGE, HGETALL, GET, TIME, ZCARD) and can
// take neither.
BOOST_AUTO_TEST_CASE(a_read_only_user_inspects_locks_and_semaphores)
{
    cluster nodes(3);
    create_user(nodes, app_user);
    create_user(nodes, viewer_user, "viewer");
    asio::io_context ctx;
    redlock::client writer(ctx.get_executor(), as_app(nodes, 3));
    redlock::client viewer(ctx.get_executor(), as_app(nodes, 3, "viewer"));
    run_coro(ctx, [&]() -> asio::awaitable<void> {
        co_await writer.async_connect(asio::use_awaitable);
        co_await viewer.async_connect(asio::use_awaitable);
        redlock::mutex m(writer, "app:report", {.ttl = 5s, .fencing = true});
        auto held = co_await m.async_lock(asio::use_awaitable);
        redlock::semaphore exports(writer, "app:exports", 2, {.ttl = 5s});
        auto permit = co_await exports.async_acquire(asio::use_awaitable);

        redlock::diagnostics diag;
        const std::string key = "app:report";
        auto [ec, lock_view] = co_await redlock::mutex(viewer, key).async_inspect(diag, use_tuple);
        require_ok(ec, diag, "inspect a lock");
        BOOST_TEST(lock_view.holder().value_or("") == held.token());
        BOOST_TEST(lock_view.highest_fence() == held.fencing_token());
        redlock::semaphore seen_exports(viewer, "app:exports", 2);
        auto [semaphore_ec, semaphore_view] = co_await seen_exports.async_inspect(diag, use_tuple);
        require_ok(semaphore_ec, diag, "inspect a semaphore");
        BOOST_TEST(semaphore_view.holders().size() == 1u);

        redlock::mutex intruder(viewer, "app:other", {.ttl = 5s, .wait = 0s});
        auto [lock_ec, none] = co_await intruder.async_lock(diag, use_tuple);
        BOOST_TEST(lock_ec == redlock::error::no_quorum, lock_ec.message() << ": " << diag.message());

        co_await permit.async_release(use_tuple);
        co_await held.async_release(use_tuple);
        writer.close();
        viewer.close();
    });
}
