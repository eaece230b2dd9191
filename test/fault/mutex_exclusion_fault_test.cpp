// Mutual exclusion under node faults: coroutines on two threads and two other processes make non-atomic
// read-modify-write increments of a counter on a Redis node of its own, under the Redlock mutex over 5 nodes,
// while the test kills one lock node and pauses another mid-run (and, in a variant, restarts the killed one
// empty while the lock is in use). No update is lost, and increments continue through the faults.
#include <common/processes/exclusion_run.hpp>
#include <common/processes/helper_process.hpp>
#include <common/processes/subprocess.hpp>
#include <csignal>

using namespace redlock::test::exclusion;
using redlock::test::cluster;
using redlock::test::comma_joined;
using redlock::test::redis_node;

namespace {

struct fault_plan {
    bool restart_killed = false;  // restart the killed node, empty, while the others keep locking
};

void increments_survive(const fault_plan& plan)
{
    constexpr int coroutines = 20, processes = 2, process_coroutines = 4, process_threads = 2;
    // Increments (of every process) before the faults, and again after them.
#ifdef REDLOCK_TEST_SANITIZED
    constexpr long phase = 100;
#else
    constexpr long phase = 300;
#endif
    const std::string key = "exclusion:faults";
    constexpr std::size_t killed = 1, paused = 3;

    cluster lock_nodes(5);
    redis_node counter_node;
    const auto dir = redlock::test::make_temp_dir("exclusion-fault-");
    const auto start = steady::now();
    auto counter = [&] { return read_counter(counter_node, key); };

    // Every worker runs until told to stop, so the faults land mid-run however fast the box is.
    std::vector<std::unique_ptr<redlock::test::helper_process>> helpers;
    for (int i = 0; i < processes; ++i) {
        helpers.push_back(std::make_unique<redlock::test::helper_process>(
            "exclusion_worker", dir, "helper" + std::to_string(i),
            std::vector<std::string>{comma_joined(lock_nodes.urls()), counter_node.url(), key, "0",
                                     std::to_string(process_coroutines), std::to_string(process_threads)}));
    }
    BOOST_REQUIRE(redlock::test::wait_until([&] { return counter() > 0; }, 15s));

    asio::io_context ctx(2);
    auto s = std::make_shared<shared_run>(ctx.get_executor(), lock_nodes.urls(), counter_node);
    s->key = key;
    s->per_coroutine = 0;
    s->coroutines = coroutines;
    launch(ctx, s, locked_increments);
    // Progress of every process (the lock need not be fair to ours), polled gently: each poll is a redis-cli.
    auto reach = [&](long target) {
        for (const auto until = steady::now() + 30s; steady::now() < until; std::this_thread::sleep_for(50ms))
            if (counter() >= target) return true;
        return false;
    };
    {
        context_threads threads(ctx, 2);

        BOOST_REQUIRE_MESSAGE(reach(phase), "no progress before the faults: " << counter());
        const auto fault_at = steady::now();
        lock_nodes[killed].kill();
        lock_nodes[paused].pause();
        const long at_fault = counter();
        std::this_thread::sleep_for(1s);
        const long at_resume = counter();
        lock_nodes[paused].resume();
        // Three of five still make a quorum, and the paused node's deadline (min(50 ms, ttl / 10)) keeps it from
        // stalling anyone for long; but attempts that split the three live nodes wait for that deadline, so the
        // rate drops a lot (observed 1 to 100 per second, against 200 to 400): a warning, not a failure.
        BOOST_TEST_MESSAGE(at_resume - at_fault << " increments while one node was dead and one paused");
        BOOST_WARN(at_resume > at_fault);

        if (plan.restart_killed) {
            // Later than a TTL after the kill (no lease granted by the lost data survives), as Redlock asks of
            // nodes without persistence; the workers keep taking the lock all along.
            std::this_thread::sleep_until(fault_at + 2500ms);
            lock_nodes[killed].restart();
            const long at_restart = counter();
            // The clients reconnect (their backoff reaches 2 s) and the empty node takes part again.
            auto ran_scripts = [&] {
                return lock_nodes[killed].cli({"INFO", "commandstats"}).find("cmdstat_eval") != std::string::npos;
            };
            bool rejoined = false;
            for (const auto until = steady::now() + 10s; !(rejoined = ran_scripts()) && steady::now() < until;)
                std::this_thread::sleep_for(50ms);
            BOOST_TEST(rejoined, "the restarted node ran no lock script");
            BOOST_TEST_MESSAGE("restarted node " << killed << " at counter " << at_restart << "; "
                                                 << counter() - at_restart << " increments until it rejoined");
        }
        const long last = counter();
        BOOST_REQUIRE_MESSAGE(reach(last + phase), "no progress after the faults: " << counter());

        s->stop = true;
        for (auto& h : helpers) h->signal(SIGTERM);  // stop after the increments under way
        wait_finished(*s, 30s);
    }

    long helper_increments = 0;
    for (auto& h : helpers) {
        const int status = h->wait(30s);
        BOOST_TEST_MESSAGE("helper: " << h->output());
        BOOST_REQUIRE_MESSAGE(status == 0, "helper exit status " << status << ": " << h->output());
        helper_increments += h->field("increments");
        BOOST_TEST(h->field("overlaps") == 0);
    }
    const long final_count = counter();
    BOOST_TEST_MESSAGE("in-process: " << s->increments << " increments, " << s->acquire_failures
                                      << " acquire failures retried, " << s->aborted << " aborted, "
                                      << s->release_failures << " release failures (" << s->release_errors
                                      << "); helpers: " << helper_increments << "; counter " << final_count << "; "
                                      << elapsed_ms(start) << " ms");
    BOOST_TEST(s->overlaps == 0);
    BOOST_TEST(final_count == s->increments + helper_increments);
    std::filesystem::remove_all(dir);
}

}  // namespace

BOOST_AUTO_TEST_CASE(no_update_is_lost_when_a_lock_node_dies_and_another_pauses_mid_run)
{
    increments_survive({});
}

BOOST_AUTO_TEST_CASE(no_update_is_lost_when_the_killed_node_restarts_empty_while_the_lock_is_in_use)
{
    increments_survive({.restart_killed = true});
}
