// Mutual exclusion as a property: coroutines on two threads, and two other processes, make non-atomic
// read-modify-write increments (GET, pause, SET) of a counter kept on a Redis node of its own, each under the
// Redlock mutex over 5 nodes; no update is lost. Control runs without the lock lose updates: the check can
// see a violation.
#include <common/processes/exclusion_run.hpp>
#include <common/processes/helper_process.hpp>
#include <common/processes/subprocess.hpp>

using namespace redlock::test::exclusion;
using redlock::test::cluster;
using redlock::test::comma_joined;
using redlock::test::redis_node;

namespace {

// Control: the same read-modify-write with no lock.
asio::awaitable<void> unlocked_increments(std::shared_ptr<shared_run> s, std::size_t)
{
    for (long done = 0; more_to_do(*s, done); ++done) {
        const long value = co_await get_counter(s->counter, s->key);
        co_await sleep_for(s->window);
        co_await set_counter(s->counter, s->key, value + 1);
        ++s->increments;
    }
}

// Waits until every coroutine got here (`arrived` counts arrivals over all rounds).
asio::awaitable<void> barrier(std::atomic<long>& arrived, long target)
{
    ++arrived;
    while (arrived.load() < target) co_await sleep_for(1ms);
}

// Control, deterministic: in each round every coroutine reads, then every coroutine writes. All read the
// same value, so a round adds 1 whatever the number of coroutines.
asio::awaitable<void> lockstep_unlocked_increments(std::shared_ptr<shared_run> s, std::size_t)
{
    for (long round = 1; round <= s->per_coroutine; ++round) {
        const long value = co_await get_counter(s->counter, s->key);
        co_await barrier(s->reads, round * s->coroutines);
        co_await set_counter(s->counter, s->key, value + 1);
        ++s->increments;
        co_await barrier(s->writes, round * s->coroutines);
    }
}

}  // namespace

BOOST_AUTO_TEST_CASE(increments_under_the_lock_from_threads_and_processes_lose_no_update)
{
#ifdef REDLOCK_TEST_SANITIZED
    constexpr int coroutines = 20, per_coroutine = 5;  // the same contention, a fifth of the work
#else
    constexpr int coroutines = 20, per_coroutine = 25;
#endif
    constexpr int processes = 2, process_coroutines = 4, process_threads = 2;
    constexpr long total = coroutines * per_coroutine + processes * process_coroutines * per_coroutine;
    const std::string key = "exclusion:counter";

    cluster lock_nodes(5);
    redis_node counter_node;
    const auto dir = redlock::test::make_temp_dir("exclusion-");
    const auto start = steady::now();

    // The other processes first; the in-process workers start once they are incrementing, so all overlap.
    std::vector<std::unique_ptr<redlock::test::helper_process>> helpers;
    for (int i = 0; i < processes; ++i) {
        helpers.push_back(std::make_unique<redlock::test::helper_process>(
            "exclusion_worker", dir, "helper" + std::to_string(i),
            std::vector<std::string>{comma_joined(lock_nodes.urls()), counter_node.url(), key,
                                     std::to_string(per_coroutine), std::to_string(process_coroutines),
                                     std::to_string(process_threads)}));
    }
    BOOST_REQUIRE(redlock::test::wait_until([&] { return read_counter(counter_node, key) > 0; }, 15s));
    for (auto& h : helpers) BOOST_TEST(h->running(), "a helper finished before the in-process workers started");

    asio::io_context ctx(2);
    auto s = std::make_shared<shared_run>(ctx.get_executor(), lock_nodes.urls(), counter_node);
    s->key = key;
    s->per_coroutine = per_coroutine;
    s->coroutines = coroutines;
    launch(ctx, s, locked_increments);
    const auto in_process_start = steady::now();
    {
        context_threads threads(ctx, 2);
        wait_finished(*s, 60s);
    }
    const auto in_process_ms = elapsed_ms(in_process_start);

    long helper_increments = 0;
    for (auto& h : helpers) {
        const int status = h->wait(60s);
        BOOST_TEST_MESSAGE("helper: " << h->output());
        BOOST_REQUIRE_MESSAGE(status == 0, "helper exit status " << status << ": " << h->output());
        helper_increments += h->field("increments");
        BOOST_TEST(h->field("overlaps") == 0);
    }
    const long final_count = read_counter(counter_node, key);
    BOOST_TEST_MESSAGE("in-process: " << s->increments << " increments in " << in_process_ms << " ms, "
                                      << s->acquire_failures << " acquire failures retried, " << s->aborted
                                      << " aborted, " << s->release_failures << " release failures ("
                                      << s->release_errors << "); total " << elapsed_ms(start) << " ms; counter "
                                      << final_count << " of " << total);
    BOOST_TEST(s->increments == coroutines * per_coroutine);
    BOOST_TEST(helper_increments == processes * process_coroutines * per_coroutine);
    BOOST_TEST(s->overlaps == 0);
    BOOST_TEST(final_count == total);
    std::filesystem::remove_all(dir);
}

BOOST_AUTO_TEST_CASE(the_same_increments_without_the_lock_lose_updates)
{
    redis_node counter_node;

    // Deterministic: in lockstep every round adds exactly 1, however many coroutines wrote.
    {
        constexpr int coroutines = 20, rounds = 5;
        asio::io_context ctx(2);
        auto s = std::make_shared<shared_run>(ctx.get_executor(), std::vector<std::string>{}, counter_node);
        s->key = "control:lockstep";
        s->per_coroutine = rounds;
        s->coroutines = coroutines;
        launch(ctx, s, lockstep_unlocked_increments);
        {
            context_threads threads(ctx, 2);
            wait_finished(*s, 30s);
        }
        const long final_count = read_counter(counter_node, s->key);
        BOOST_TEST_MESSAGE("lockstep control: counter " << final_count << " after " << s->increments << " increments, "
                                                        << s->increments - final_count << " lost");
        BOOST_TEST(s->increments == coroutines * rounds);
        BOOST_TEST(final_count == rounds);
    }

    // The very loop of the locked run, minus the lock: 20 coroutines started together overlap at once.
    {
        constexpr int coroutines = 20, per_coroutine = 10;
        asio::io_context ctx(2);
        auto s = std::make_shared<shared_run>(ctx.get_executor(), std::vector<std::string>{}, counter_node);
        s->key = "control:free";
        s->per_coroutine = per_coroutine;
        s->coroutines = coroutines;
        launch(ctx, s, unlocked_increments);
        {
            context_threads threads(ctx, 2);
            wait_finished(*s, 30s);
        }
        const long final_count = read_counter(counter_node, s->key);
        BOOST_TEST_MESSAGE("free-running control: counter " << final_count << " after " << s->increments
                                                            << " increments, " << s->increments - final_count
                                                            << " lost");
        BOOST_TEST(s->increments == coroutines * per_coroutine);
        BOOST_TEST(final_count < s->increments / 2);
    }
}
