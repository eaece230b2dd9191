// The cache guard against real nodes: hits and misses, single flight and its cancellation, loader errors and
// deadlines, the fenced write, null markers, the Bloom filter in front of the loader, jittered TTLs in the
// store, and logical expiry serving stale values during a slow refresh.
#include <redlock/redlock.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/system/system_error.hpp>
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <atomic>
#include <common/run_coro.hpp>
#include <common/servers/lock_checks.hpp>
#include <common/servers/redis_node.hpp>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace asio = boost::asio;
using namespace std::chrono_literals;
using redlock::error;
using redlock::error_code;
using redlock::test::cluster;
using redlock::test::fast_reconnecting;
using redlock::test::run_coro;
using redlock::test::sleep_for;
using ms = std::chrono::milliseconds;
using steady = std::chrono::steady_clock;
using value_type = std::optional<std::string>;
constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);

namespace {

// Lock nodes first, the value store last.
struct cache_rig {
    explicit cache_rig(std::size_t lock_nodes = 1)
        : nodes(lock_nodes + 1),
          locks(ctx.get_executor(), lock_configs(lock_nodes)),
          store(ctx.get_executor(), fast_reconnecting(nodes[lock_nodes].url()))
    {}

    std::vector<redlock::node_config> lock_configs(std::size_t n) const
    {
        std::vector<redlock::node_config> out;
        for (std::size_t i = 0; i < n; ++i) out.push_back(fast_reconnecting(nodes[i].url()));
        return out;
    }
    redlock::test::redis_node& store_node() { return nodes[nodes.size() - 1]; }
    redlock::test::redis_node& lock_node() { return nodes[0]; }

    cluster nodes;
    asio::io_context ctx;
    redlock::client locks;
    redlock::redis store;
};

// What a loader saw, counted on the one thread the tests run.
struct load_log {
    int runs = 0;
    int finished = 0;
    int cancelled = 0;
};

// Returns `value` after `delay`; a cancellation ends it (counted) with operation_aborted.
asio::awaitable<value_type> slow_load(std::shared_ptr<load_log> log, value_type value, ms delay)
{
    ++log->runs;
    asio::steady_timer t(co_await asio::this_coro::executor, delay);
    auto [ec] = co_await t.async_wait(use_tuple);
    if (ec) {
        ++log->cancelled;
        throw boost::system::system_error(ec);
    }
    ++log->finished;
    co_return value;
}

redlock::cache_loader loader_of(std::shared_ptr<load_log> log, value_type value, ms delay = 0ms)
{
    return [log, value, delay] { return slow_load(log, value, delay); };
}

// A loader that ignores its cancellation: a timer whose wait is bound to no cancellation slot.
asio::awaitable<value_type> deaf_load(std::shared_ptr<load_log> log, ms delay)
{
    ++log->runs;
    asio::steady_timer t(co_await asio::this_coro::executor, delay);
    co_await t.async_wait(asio::bind_cancellation_slot(asio::cancellation_slot(), use_tuple));
    ++log->finished;
    co_return "too late";
}

template <class E>
asio::awaitable<value_type> throwing_load(std::shared_ptr<load_log> log, E failure)
{
    ++log->runs;
    co_await sleep_for(100ms);
    throw failure;
}

// A call's outcome, recorded by a plain callback.
struct call_result {
    bool done = false;
    error_code ec;
    value_type value;
    steady::time_point at;
};

auto recorder(std::shared_ptr<call_result> r)
{
    return [r](error_code ec, value_type v) {
        r->done = true;
        r->ec = ec;
        r->value = std::move(v);
        r->at = steady::now();
    };
}

asio::awaitable<bool> soon(std::function<bool()> pred, ms limit = 3000ms)
{
    const auto deadline = steady::now() + limit;
    while (!pred()) {
        if (steady::now() >= deadline) co_return false;
        co_await sleep_for(5ms);
    }
    co_return true;
}

const redlock::cache_options quick{.ttl = 30'000ms,
                                   .null_ttl = 400ms,
                                   .ttl_jitter = 0,
                                   .load_timeout = 5000ms,
                                   .lock = {.ttl = 2000ms, .wait = 5000ms}};

}  // namespace

BOOST_AUTO_TEST_CASE(a_miss_loads_once_and_a_hit_is_one_read_of_the_store)
{
    cache_rig rig(3);
    redlock::cache_guard guard(rig.locks, rig.store, quick);
    auto log = std::make_shared<load_log>();
    run_coro(rig.ctx, [&]() -> asio::awaitable<void> {
        auto loader = loader_of(log, "hello");
        auto first = co_await guard.async_get_or_load("user:1", loader, asio::use_awaitable);
        BOOST_TEST(first.value_or("(none)") == "hello");
        BOOST_TEST(log->runs == 1);
        const auto stored = rig.store_node().cli({"GET", "user:1"});
        BOOST_TEST(stored.starts_with("rlc1 v 1 "));  // the rebuild lock's first fencing token
        BOOST_TEST(stored.ends_with("\nhello"));
        const auto gets = rig.store_node().command_stat("get");
        for (int i = 0; i < 5; ++i) {
            auto again = co_await guard.async_get_or_load("user:1", loader, asio::use_awaitable);
            BOOST_TEST(again.value_or("(none)") == "hello");
        }
        BOOST_TEST(log->runs == 1);
        BOOST_TEST(rig.store_node().command_stat("get") == gets + 5);
        const auto pttl = std::stol(rig.store_node().cli({"PTTL", "user:1"}));
        BOOST_TEST((pttl > 25'000 && pttl <= 30'000));
        // The lock is gone once the load is done.
        BOOST_TEST(rig.lock_node().cli({"EXISTS", "{user:1}:rebuild"}) == "0");
    });
}

BOOST_AUTO_TEST_CASE(concurrent_misses_in_one_process_share_one_load)
{
    cache_rig rig;
    redlock::cache_guard guard(rig.locks, rig.store, quick);
    auto log = std::make_shared<load_log>();
    auto other = std::make_shared<load_log>();
    std::vector<std::shared_ptr<call_result>> calls;
    for (int i = 0; i < 200; ++i) {
        calls.push_back(std::make_shared<call_result>());
        // Every caller names its own loader; only the first one's runs.
        guard.async_get_or_load("shared", loader_of(i == 0 ? log : other, "v"), recorder(calls.back()));
    }
    run_coro(rig.ctx, [&]() -> asio::awaitable<void> {
        BOOST_TEST(
            co_await soon([&] { return std::all_of(calls.begin(), calls.end(), [](auto& c) { return c->done; }); }));
        for (auto& c : calls) {
            BOOST_TEST(!c->ec);
            BOOST_TEST(c->value.value_or("(none)") == "v");
        }
        BOOST_TEST(log->runs == 1);
        BOOST_TEST(other->runs == 0);
        BOOST_TEST(rig.lock_node().command_stat("evalsha") + rig.lock_node().command_stat("set") <= 3);
    });
}

BOOST_AUTO_TEST_CASE(cancelling_the_first_caller_does_not_cancel_the_load)
{
    cache_rig rig;
    redlock::cache_guard guard(rig.locks, rig.store, quick);
    auto log = std::make_shared<load_log>();
    asio::cancellation_signal cancel_first;
    auto first = std::make_shared<call_result>();
    auto second = std::make_shared<call_result>();
    guard.async_get_or_load("k", loader_of(log, "loaded", 500ms),
                            asio::bind_cancellation_slot(cancel_first.slot(), recorder(first)));
    guard.async_get_or_load("k", loader_of(log, "other", 500ms), recorder(second));
    run_coro(rig.ctx, [&]() -> asio::awaitable<void> {
        BOOST_TEST(co_await soon([&] { return log->runs == 1; }));
        const auto cancelled_at = steady::now();
        cancel_first.emit(asio::cancellation_type::terminal);
        BOOST_TEST(co_await soon([&] { return first->done; }));
        BOOST_TEST(first->ec == asio::error::operation_aborted);
        BOOST_TEST(!second->done);  // it left alone, long before the load ends
        BOOST_TEST((first->at - cancelled_at < 400ms));
        BOOST_TEST(co_await soon([&] { return second->done; }));
        BOOST_TEST(!second->ec);
        BOOST_TEST(second->value.value_or("(none)") == "loaded");
        BOOST_TEST(log->runs == 1);
        BOOST_TEST(log->cancelled == 0);
        BOOST_TEST(rig.store_node().cli({"GET", "k"}).ends_with("\nloaded"));
    });
}

BOOST_AUTO_TEST_CASE(the_load_is_cancelled_when_its_last_waiter_leaves_and_its_lock_released)
{
    cache_rig rig;
    redlock::cache_guard guard(rig.locks, rig.store, quick);
    auto log = std::make_shared<load_log>();
    asio::cancellation_signal cancel_a, cancel_b;
    auto a = std::make_shared<call_result>();
    auto b = std::make_shared<call_result>();
    guard.async_get_or_load("k", loader_of(log, "slow", 3000ms),
                            asio::bind_cancellation_slot(cancel_a.slot(), recorder(a)));
    guard.async_get_or_load("k", loader_of(log, "slow", 3000ms),
                            asio::bind_cancellation_slot(cancel_b.slot(), recorder(b)));
    run_coro(rig.ctx, [&]() -> asio::awaitable<void> {
        BOOST_TEST(co_await soon([&] { return log->runs == 1; }));
        cancel_a.emit(asio::cancellation_type::terminal);
        co_await sleep_for(50ms);
        BOOST_TEST(log->cancelled == 0);  // b still waits
        cancel_b.emit(asio::cancellation_type::partial);
        BOOST_TEST(co_await soon([&] { return a->done && b->done && log->cancelled == 1; }, 1000ms));
        BOOST_TEST(b->ec == asio::error::operation_aborted);
        BOOST_TEST(co_await soon([&] { return rig.lock_node().cli({"EXISTS", "{k}:rebuild"}) == "0"; }, 1000ms));
        BOOST_TEST(rig.store_node().cli({"EXISTS", "k"}) == "0");
        // A new caller starts a new load at once (not after the lock's TTL).
        const auto start = steady::now();
        auto loader = loader_of(log, "fresh");
        auto value = co_await guard.async_get_or_load("k", loader, asio::use_awaitable);
        BOOST_TEST(value.value_or("(none)") == "fresh");
        BOOST_TEST((steady::now() - start < 1500ms));
        BOOST_TEST(log->runs == 2);
    });
}

BOOST_AUTO_TEST_CASE(a_loader_error_reaches_every_waiter_and_is_not_cached)
{
    cache_rig rig;
    redlock::cache_guard guard(rig.locks, rig.store, quick);
    auto log = std::make_shared<load_log>();
    const auto failure = boost::system::errc::make_error_code(boost::system::errc::io_error);
    redlock::cache_loader failing = [log, failure] { return throwing_load(log, boost::system::system_error(failure)); };
    std::vector<std::shared_ptr<call_result>> calls;
    for (int i = 0; i < 20; ++i) {
        calls.push_back(std::make_shared<call_result>());
        guard.async_get_or_load("broken", failing, recorder(calls.back()));
    }
    run_coro(rig.ctx, [&]() -> asio::awaitable<void> {
        BOOST_TEST(
            co_await soon([&] { return std::all_of(calls.begin(), calls.end(), [](auto& c) { return c->done; }); }));
        for (auto& c : calls) {
            BOOST_TEST(c->ec == failure);
            BOOST_TEST(!c->value);
        }
        BOOST_TEST(log->runs == 1);
        BOOST_TEST(rig.store_node().cli({"EXISTS", "broken"}) == "0");

        // Anything else than a system_error: load_failed, its text in the diagnostics; the next miss loads again.
        redlock::cache_loader odd = [log] { return throwing_load(log, std::runtime_error("the database is down")); };
        redlock::diagnostics diag;
        auto [ec, value] = co_await guard.async_get_or_load("broken", odd, quick, diag, use_tuple);
        BOOST_TEST(ec == error::load_failed);
        BOOST_TEST(std::string(diag.client_message()).find("the database is down") != std::string::npos);
        BOOST_TEST(log->runs == 2);
    });
}

BOOST_AUTO_TEST_CASE(a_hung_loader_is_bounded_by_its_deadline_and_no_waiter_hangs)
{
    cache_rig rig;
    auto options = quick;
    options.load_timeout = 300ms;
    redlock::cache_guard guard(rig.locks, rig.store, options);
    auto log = std::make_shared<load_log>();
    redlock::cache_loader deaf = [log] { return deaf_load(log, 20'000ms); };
    std::vector<std::shared_ptr<call_result>> calls;
    for (int i = 0; i < 5; ++i) {
        calls.push_back(std::make_shared<call_result>());
        guard.async_get_or_load("hung", deaf, recorder(calls.back()));
    }
    run_coro(rig.ctx, [&]() -> asio::awaitable<void> {
        // Well before the loader would return (20 s), every waiter has its answer.
        BOOST_TEST(co_await soon(
            [&] { return std::all_of(calls.begin(), calls.end(), [](auto& c) { return c->done; }); }, 5000ms));
        for (auto& c : calls) BOOST_TEST(c->ec == error::timeout);
        BOOST_TEST(log->finished == 0);
        // The lock was released: the next miss loads at once.
        auto loader = loader_of(log, "ok");
        auto value = co_await guard.async_get_or_load("hung", loader, asio::use_awaitable);
        BOOST_TEST(value.value_or("(none)") == "ok");
    });
}

BOOST_AUTO_TEST_CASE(a_lost_rebuild_lock_cancels_the_loader_and_writes_nothing)
{
    cache_rig rig;
    auto options = quick;
    options.lock.ttl = 600ms;  // the watchdog extends every 200 ms
    redlock::cache_guard guard(rig.locks, rig.store, options);
    auto log = std::make_shared<load_log>();
    run_coro(rig.ctx, [&]() -> asio::awaitable<void> {
        auto result = std::make_shared<call_result>();
        guard.async_get_or_load("lost", loader_of(log, "late", 3000ms), recorder(result));
        BOOST_TEST(co_await soon([&] { return log->runs == 1; }));
        rig.lock_node().cli({"DEL", "{lost}:rebuild"});  // as if it had expired: the next extension fails
        BOOST_TEST(co_await soon([&] { return result->done; }, 2000ms));
        BOOST_TEST(result->ec == error::lost);
        BOOST_TEST(co_await soon([&] { return log->cancelled == 1; }, 1000ms));
        BOOST_TEST(rig.store_node().cli({"EXISTS", "lost"}) == "0");
    });
}

BOOST_AUTO_TEST_CASE(a_stale_loader_cannot_overwrite_a_newer_value)
{
    cache_rig rig;
    redlock::cache_guard guard(rig.locks, rig.store, quick);
    auto log = std::make_shared<load_log>();
    // What a newer holder wrote (token 1000) while our slow loader ran under token 1.
    const std::string newer = "rlc1 v 1000 4102444800000 4102444800000 10\nnewer";
    run_coro(rig.ctx, [&]() -> asio::awaitable<void> {
        auto result = std::make_shared<call_result>();
        guard.async_get_or_load("fenced", loader_of(log, "older", 400ms), recorder(result));
        BOOST_TEST(co_await soon([&] { return log->runs == 1; }));
        rig.store_node().cli({"SET", "fenced", newer, "PX", "60000"});
        BOOST_TEST(co_await soon([&] { return result->done; }));
        BOOST_TEST(!result->ec);
        BOOST_TEST(result->value.value_or("(none)") == "newer");  // the refused write answers with what won
        BOOST_TEST(rig.store_node().cli({"GET", "fenced"}) == newer);
        // A value in another format (not ours) carries no token: it is overwritten.
        rig.store_node().cli({"SET", "foreign", "raw bytes"});
        auto loader = loader_of(log, "ours");
        auto ours = co_await guard.async_get_or_load("foreign", loader, asio::use_awaitable);
        BOOST_TEST(ours.value_or("(none)") == "ours");
        BOOST_TEST(rig.store_node().cli({"GET", "foreign"}).ends_with("\nours"));
    });
}

BOOST_AUTO_TEST_CASE(null_results_are_cached_then_expire)
{
    cache_rig rig;
    redlock::cache_guard guard(rig.locks, rig.store, quick);  // null_ttl 400 ms, no jitter
    auto log = std::make_shared<load_log>();
    run_coro(rig.ctx, [&]() -> asio::awaitable<void> {
        auto nothing = loader_of(log, std::nullopt);
        auto [ec, first] = co_await guard.async_get_or_load("user:missing", nothing, use_tuple);
        BOOST_TEST(!ec);
        BOOST_TEST(!first);
        BOOST_TEST(log->runs == 1);
        BOOST_TEST(rig.store_node().cli({"GET", "user:missing"}).starts_with("rlc1 n "));
        const auto pttl = std::stol(rig.store_node().cli({"PTTL", "user:missing"}));
        BOOST_TEST((pttl > 0 && pttl <= 400));
        auto [ec2, second] = co_await guard.async_get_or_load("user:missing", nothing, use_tuple);
        BOOST_TEST(!ec2);
        BOOST_TEST(!second);
        BOOST_TEST(log->runs == 1);  // the marker answered
        co_await sleep_for(500ms);
        auto [ec3, third] = co_await guard.async_get_or_load("user:missing", nothing, use_tuple);
        BOOST_TEST(!third);
        BOOST_TEST(log->runs == 2);  // expired: loaded again
        // null_ttl 0: not cached at all.
        auto uncached = quick;
        uncached.null_ttl = 0ms;
        co_await guard.async_get_or_load("user:other", nothing, uncached, asio::use_awaitable);
        BOOST_TEST(rig.store_node().cli({"EXISTS", "user:other"}) == "0");
    });
}

BOOST_AUTO_TEST_CASE(a_key_the_bloom_filter_does_not_contain_never_reaches_the_lock_or_the_loader)
{
    cache_rig rig;
    redlock::bloom_filter known(rig.store, "users:known", 1000, 0.01);
    redlock::cache_guard guard(rig.locks, rig.store, known, quick);
    auto log = std::make_shared<load_log>();
    run_coro(rig.ctx, [&]() -> asio::awaitable<void> {
        std::vector<std::string> items{"user:1"};
        co_await known.async_add(items, asio::use_awaitable);
        auto loader = loader_of(log, "ada");
        auto absent = co_await guard.async_get_or_load("user:2", loader, asio::use_awaitable);
        BOOST_TEST(!absent);
        BOOST_TEST(log->runs == 0);
        BOOST_TEST(rig.lock_node().command_stat("evalsha") + rig.lock_node().command_stat("set") == 0);
        BOOST_TEST(rig.store_node().cli({"EXISTS", "user:2"}) == "0");  // nothing cached for it
        auto present = co_await guard.async_get_or_load("user:1", loader, asio::use_awaitable);
        BOOST_TEST(present.value_or("(none)") == "ada");
        BOOST_TEST(log->runs == 1);
    });
}

// Defect: the filter's lookup did not check that the filter exists. After a FLUSHDB (or a restart without
// persistence, or an eviction) every key read as absent and the guard answered "does not exist" without loading.
// A missing filter rules nothing out: the guard loads, counts it and logs a warning.
BOOST_AUTO_TEST_CASE(a_lost_bloom_filter_hides_no_key)
{
    cache_rig rig;
    redlock::bloom_filter known(rig.store, "users:known", 1000, 0.01);
    redlock::cache_guard guard(rig.locks, rig.store, known, quick);
    std::vector<std::string> warnings;
    rig.locks.set_log_handler([&](redlock::log_level level, std::string_view text) {
        if (level == redlock::log_level::warning) warnings.emplace_back(text);
    });
    auto log = std::make_shared<load_log>();
    run_coro(rig.ctx, [&]() -> asio::awaitable<void> {
        std::vector<std::string> items{"user:1"};
        co_await known.async_add(items, asio::use_awaitable);
        rig.store_node().cli({"FLUSHDB"});

        std::vector<std::string> both{"user:1", "user:2"};
        redlock::diagnostics diag;
        auto present = co_await known.async_contains(both, diag, asio::use_awaitable);
        BOOST_TEST(present == (std::vector<bool>{true, true}));
        BOOST_TEST(diag.client_message().find("does not exist") != std::string_view::npos, diag.client_message());

        auto value = co_await guard.async_get_or_load("user:1", loader_of(log, "ada"), asio::use_awaitable);
        BOOST_TEST(value.value_or("(none)") == "ada");
        BOOST_TEST(log->runs == 1);
        BOOST_TEST(rig.locks.stats().bloom_filter_missing == 1u);
        BOOST_REQUIRE(warnings.size() == 1u);
        BOOST_TEST(warnings[0].find("users:known") != std::string::npos, warnings[0]);

        // The bitmap alone evicted (its shape key left) is as missing as both.
        co_await known.async_add(items, asio::use_awaitable);
        rig.store_node().cli({"DEL", "users:known"});
        auto again = co_await guard.async_get_or_load("user:3", loader_of(log, "alan"), asio::use_awaitable);
        BOOST_TEST(again.value_or("(none)") == "alan");
        BOOST_TEST(rig.locks.stats().bloom_filter_missing == 2u);
        BOOST_TEST(warnings.size() == 1u);  // at most one warning a minute
    });
}

BOOST_AUTO_TEST_CASE(jittered_ttls_spread_over_the_store_without_clustering)
{
    // 1,000 values loaded together with ttl 100 s +- 10%: their TTLs when written fill 10 bins of 2 s evenly
    // (each within 40% of the 100 a flat spread gives: over 4 standard deviations). Without jitter they would
    // all fall in one bin. A TTL when written is its PTTL now plus the time since its call completed, so a slow
    // machine (a sanitizer build) spreading the writes over seconds does not skew the bins.
    cache_rig rig;
    redlock::cache_options options = quick;
    options.ttl = 100'000ms;
    options.ttl_jitter = 0.1;
    options.load_timeout = 60'000ms;
    options.lock.wait = 60'000ms;  // 1,000 rebuild locks at once: no call may give up on a slow machine
    redlock::cache_guard guard(rig.locks, rig.store, options);
    auto log = std::make_shared<load_log>();
    constexpr int keys = 1000;
    std::vector<std::shared_ptr<call_result>> calls;
    for (int i = 0; i < keys; ++i) {
        calls.push_back(std::make_shared<call_result>());
        guard.async_get_or_load("item:" + std::to_string(i), loader_of(log, "x"), recorder(calls.back()));
    }
    run_coro(
        rig.ctx,
        [&]() -> asio::awaitable<void> {
            BOOST_REQUIRE(co_await soon(
                [&] { return std::all_of(calls.begin(), calls.end(), [](auto& c) { return c->done; }); }, 90'000ms));
            for (const auto& c : calls) BOOST_REQUIRE_MESSAGE(!c->ec, c->ec.message());
            redlock::request req;
            for (int i = 0; i < keys; ++i) req.push("PTTL", "item:" + std::to_string(i));
            redlock::response resp;
            const auto asked_at = steady::now();
            auto [ec] = co_await rig.store.async_exec(req, resp, use_tuple);  // one server: the keys may span slots
            BOOST_REQUIRE(!ec);
            std::vector<int> bins(10, 0);
            for (std::size_t i = 0; i < resp.size(); ++i) {
                const auto pttl = resp[i].as_integer().value_or(-1);
                const auto written_ttl = pttl + std::chrono::duration_cast<ms>(asked_at - calls[i]->at).count();
                BOOST_REQUIRE_MESSAGE((pttl > 0 && written_ttl > 89'000 && written_ttl <= 111'000),
                                      "item:" << i << " PTTL " << pttl << ", " << written_ttl << " ms when written");
                ++bins[std::clamp<std::size_t>(static_cast<std::size_t>((written_ttl - 90'000) / 2000), 0, 9)];
            }
            for (std::size_t b = 0; b < bins.size(); ++b)
                BOOST_TEST((bins[b] >= 60 && bins[b] <= 140), "bin " << b << " holds " << bins[b]);
        },
        120s);
}

BOOST_AUTO_TEST_CASE(during_a_slow_refresh_stale_values_are_served_and_the_loader_runs_once)
{
    // Two guards on separate clients stand for two processes. Past the soft TTL every read returns the stale
    // value at once, one refresh runs (across both), and once it is written reads return the new value.
    cache_rig rig;
    redlock::client other_locks(rig.ctx.get_executor(), rig.lock_configs(1));
    redlock::redis other_store(rig.ctx.get_executor(), fast_reconnecting(rig.store_node().url()));
    redlock::cache_options options = quick;
    options.soft_ttl = 300ms;
    options.ttl = 20'000ms;
    redlock::cache_guard a(rig.locks, rig.store, options);
    redlock::cache_guard b(other_locks, other_store, options);
    auto log = std::make_shared<load_log>();
    run_coro(rig.ctx, [&]() -> asio::awaitable<void> {
        auto first = loader_of(log, "v1");
        BOOST_TEST((co_await a.async_get_or_load("hot", first, asio::use_awaitable)).value_or("") == "v1");
        co_await sleep_for(400ms);  // logically expired, still in the store
        auto refresh = loader_of(log, "v2", 800ms);
        std::vector<std::shared_ptr<call_result>> reads;
        const auto start = steady::now();
        for (int round = 0; round < 10; ++round) {
            for (int i = 0; i < 10; ++i) {
                reads.push_back(std::make_shared<call_result>());
                (i % 2 ? a : b).async_get_or_load("hot", refresh, recorder(reads.back()));
            }
            co_await sleep_for(30ms);
        }
        BOOST_TEST(
            co_await soon([&] { return std::all_of(reads.begin(), reads.end(), [](auto& r) { return r->done; }); }));
        for (auto& r : reads) {
            BOOST_TEST(!r->ec);
            BOOST_TEST(r->value.value_or("(none)") == "v1");
            BOOST_TEST((r->at - start < 700ms));  // none waited for the 800 ms refresh
        }
        BOOST_TEST(log->runs == 2);
        BOOST_TEST(co_await soon([&] { return log->finished == 2; }));
        co_await sleep_for(50ms);  // the write follows the loader
        BOOST_TEST((co_await b.async_get_or_load("hot", refresh, asio::use_awaitable)).value_or("") == "v2");
        BOOST_TEST(log->runs == 2);
    });
}

BOOST_AUTO_TEST_CASE(typed_values_go_through_a_codec)
{
    struct point {
        int x, y;
    };
    struct point_codec {
        using value_type = point;
        static std::string encode(const point& p) { return std::to_string(p.x) + "," + std::to_string(p.y); }
        static std::optional<point> decode(std::string_view text)
        {
            const auto comma = text.find(',');
            if (comma == std::string_view::npos) return std::nullopt;
            return point{std::stoi(std::string(text.substr(0, comma))), std::stoi(std::string(text.substr(comma + 1)))};
        }
    };
    cache_rig rig;
    redlock::cache_guard guard(rig.locks, rig.store, quick);
    run_coro(rig.ctx, [&]() -> asio::awaitable<void> {
        auto load_point = []() -> asio::awaitable<std::optional<point>> { co_return point{3, 4}; };
        auto p = co_await guard.async_get_or_load_as<point_codec>("pt", load_point, quick, asio::use_awaitable);
        BOOST_REQUIRE(p);
        BOOST_TEST(p->x == 3);
        BOOST_TEST(p->y == 4);
        BOOST_TEST(rig.store_node().cli({"GET", "pt"}).ends_with("\n3,4"));
        rig.store_node().cli({"SET", "pt", "rlc1 v 99 4102444800000 4102444800000 1\nnot a point"});
        auto [ec, bad] = co_await guard.async_get_or_load_as<point_codec>("pt", load_point, quick, use_tuple);
        BOOST_TEST(ec == error::protocol_error);
    });
}

BOOST_AUTO_TEST_CASE(bad_arguments_fail_before_any_io)
{
    cache_rig rig;
    redlock::cache_guard guard(rig.locks, rig.store, quick);
    auto log = std::make_shared<load_log>();
    auto loader = loader_of(log, "x");
    std::vector<std::pair<std::string, redlock::cache_options>> cases;
    auto with = [&](std::string what, auto change) {
        auto o = quick;
        change(o);
        cases.emplace_back(std::move(what), o);
    };
    with("ttl 0", [](auto& o) { o.ttl = 0ms; });
    with("soft_ttl >= ttl", [](auto& o) { o.soft_ttl = o.ttl; });
    with("negative null_ttl", [](auto& o) { o.null_ttl = -1ms; });
    with("jitter 1", [](auto& o) { o.ttl_jitter = 1.0; });
    with("negative beta", [](auto& o) { o.xfetch_beta = -1; });
    with("load_timeout 0", [](auto& o) { o.load_timeout = 0ms; });
    with("lock ttl 0", [](auto& o) { o.lock.ttl = 0ms; });
    run_coro(rig.ctx, [&]() -> asio::awaitable<void> {
        for (auto& [what, o] : cases) {
            redlock::diagnostics diag;
            auto [ec, v] = co_await guard.async_get_or_load("k", loader, o, diag, use_tuple);
            BOOST_TEST(ec == error::invalid_argument, what);
            BOOST_TEST(!diag.client_message().empty(), what);
        }
        auto [empty_key, v1] = co_await guard.async_get_or_load("", loader, use_tuple);
        BOOST_TEST(empty_key == error::invalid_argument);
        auto [no_loader, v2] = co_await guard.async_get_or_load("k", redlock::cache_loader(), use_tuple);
        BOOST_TEST(no_loader == error::invalid_argument);
        BOOST_TEST(rig.store_node().command_stat("get") == 0);
        BOOST_TEST(log->runs == 0);
        // Completion is posted, never inside the call.
        bool called = false;
        guard.async_get_or_load("", loader, [&](error_code, value_type) { called = true; });
        BOOST_TEST(!called);
        BOOST_TEST(co_await soon([&] { return called; }));
    });
}

BOOST_AUTO_TEST_CASE(calls_from_four_threads_share_one_load)
{
    // The guard's work runs on its strand whatever thread calls it (run under TSan by the tsan preset).
    cache_rig rig;
    redlock::cache_guard guard(rig.locks, rig.store, quick);
    std::atomic<int> runs{0}, values{0}, done{0};
    redlock::cache_loader loader = [&runs]() -> asio::awaitable<value_type> {
        ++runs;  // a capturing coroutine lambda is safe here: the guard keeps it alive until its frame ends
        co_return "shared";
    };
    constexpr int per_thread = 100;
    auto work = asio::make_work_guard(rig.ctx);
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t)
        threads.emplace_back([&] {
            for (int i = 0; i < per_thread; ++i)
                guard.async_get_or_load("threads", loader, [&](error_code ec, value_type v) {
                    if (!ec && v == "shared") ++values;
                    ++done;
                });
            rig.ctx.run();
        });
    BOOST_TEST(redlock::test::wait_until([&] { return done == 4 * per_thread; }, 20'000ms));
    work.reset();
    rig.locks.close();
    rig.store.close();
    rig.ctx.stop();
    for (auto& t : threads) t.join();
    BOOST_TEST(values == 4 * per_thread);
    BOOST_TEST(runs == 1);
}

namespace {

// A refresh for the XFetch test: records whether the value was still in the store when it began (an early
// refresh) or had expired (a miss: a reader would have waited for this load).
asio::awaitable<value_type> recorded_refresh(std::shared_ptr<load_log> log, std::shared_ptr<std::vector<bool>> early,
                                             const redlock::test::redis_node* store, ms delay)
{
    early->push_back(store->cli({"EXISTS", "hot:xfetch"}) == "1");
    co_return co_await slow_load(log, "v" + std::to_string(log->runs + 1), delay);
}

asio::awaitable<void> read_hot(redlock::cache_guard guard, redlock::cache_loader loader, steady::time_point end,
                               std::shared_ptr<int> reads, std::shared_ptr<int> failures)
{
    while (steady::now() < end) {
        auto [ec, value] = co_await guard.async_get_or_load("hot:xfetch", loader, use_tuple);
        ++*reads;
        if (ec || !value) ++*failures;
        co_await sleep_for(1ms);
    }
}

}  // namespace

BOOST_AUTO_TEST_CASE(xfetch_refreshes_a_hot_key_before_it_expires_about_once_per_ttl)
{
    // A hot key (four readers on two guards, a read every millisecond or so) with a 3 s TTL and a 100 ms load,
    // beta 1: reads refresh it early (at about 460 ms before the expiry, where e^(-g / 100 ms) has met enough
    // reads), so it never expires: no load ever starts with the key gone. Over 10 s that is about 3.9
    // refreshes; a stampede or a refresh per read would be far more.
    cache_rig rig;
    redlock::client other_locks(rig.ctx.get_executor(), rig.lock_configs(1));
    redlock::redis other_store(rig.ctx.get_executor(), fast_reconnecting(rig.store_node().url()));
    redlock::cache_options options = quick;
    options.ttl = 3000ms;
    options.xfetch_beta = 1.0;
    redlock::cache_guard a(rig.locks, rig.store, options);
    redlock::cache_guard b(other_locks, other_store, options);
    auto log = std::make_shared<load_log>();
    auto early = std::make_shared<std::vector<bool>>();
    const auto* store = &rig.store_node();
    redlock::cache_loader loader = [log, early, store] { return recorded_refresh(log, early, store, 100ms); };
    auto reads = std::make_shared<int>(0);
    auto failures = std::make_shared<int>(0);
    run_coro(rig.ctx, [&]() -> asio::awaitable<void> {
        co_await a.async_get_or_load("hot:xfetch", loader, asio::use_awaitable);  // the first load: a miss
        const auto end = steady::now() + 10'000ms;
        int running = 4;
        for (int i = 0; i < 4; ++i)
            asio::co_spawn(co_await asio::this_coro::executor, read_hot(i % 2 ? a : b, loader, end, reads, failures),
                           [&running](std::exception_ptr e) {
                               if (e) std::rethrow_exception(e);
                               --running;
                           });
        BOOST_TEST(co_await soon([&] { return running == 0; }, 20'000ms));
    });
    BOOST_TEST_MESSAGE("xfetch: " << *reads << " reads, " << log->runs << " loads");
    BOOST_TEST(*failures == 0);
    BOOST_TEST(*reads > 2000);
    BOOST_REQUIRE(early->size() >= 3u);  // the first load, and at least two refreshes in 10 s of a 3 s TTL
    for (std::size_t i = 1; i < early->size(); ++i) BOOST_TEST((*early)[i], "load " << i << " began after expiry");
    BOOST_TEST(log->runs <= 1 + 6);  // 10 s / (3 s - 0.46 s) = 3.9 refreshes; 6 allows for slow reads
}
