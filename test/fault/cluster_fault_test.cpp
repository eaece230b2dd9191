// Locks on a real Redis Cluster (3 masters, a replica each) through its faults. `redlock exec` processes do a
// read-modify-write of counters kept on a separate server (GET, pause, SET: lost updates without the lock), one
// counter per shard, each under a lock whose key is on that shard; mid-run one shard fails over (CLUSTER FAILOVER,
// coordinated), or its master is killed (with --replica-acks 1: the grant is on the replica before it is handed
// out), or the lock key's slot migrates to another master (ASK, then MOVED). Every count must come out exact.
// Then what replica acknowledgement buys: a master killed after an unacknowledged grant loses the lock at its
// promoted replica (shown, by holding the replica back), and the same grant with acks is refused instead. Last,
// waiters across a failover and a migration are woken by the release message at the new master.
#include "common/key_slot.hpp"

#include <redlock/redlock.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <common/processes/subprocess.hpp>
#include <common/run_coro.hpp>
#include <common/servers/lock_checks.hpp>
#include <common/servers/redis_cluster.hpp>
#include <common/servers/redis_node.hpp>
#include <cstdlib>
#include <functional>
#include <optional>
#include <string>
#include <sys/wait.h>
#include <thread>
#include <vector>

namespace asio = boost::asio;
using namespace std::chrono_literals;
using namespace redlock::test;
using redlock::error;
using redlock::error_code;
using steady = std::chrono::steady_clock;
constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);

namespace {

constexpr int workers_per_shard = 4;
constexpr int increments_per_worker = 6;

// The worker processes: each increments its shard's counter `increments_per_worker` times, one lock each.
class counter_run {
public:
    counter_run(sharded_cluster& cluster, std::vector<std::string> exec_options = {}) : cluster_(cluster)
    {
        const std::string redis_cli = cli_program();
        const std::string rc = redis_cli + " -p " + std::to_string(counters_.port());
        dir_ = make_temp_dir("redlock-cluster-counter-");
        for (std::size_t shard = 0; shard < cluster.shards(); ++shard) {
            lock_keys_.push_back(cluster.key_on_shard(shard, "counter-lock:"));
            const std::string counter = "counter:" + std::to_string(shard);
            counters_.cli({"SET", counter, "0"});
            const std::string body = "set -e; v=$(" + rc + " GET " + counter + "); sleep 0.005; " + rc + " SET " +
                                     counter + " $((v + 1)) >/dev/null";
            std::string exec = "'" + std::string(REDLOCK_CLI_PATH) + "' exec --nodes \"" + cluster.url() + "\" --key " +
                               lock_keys_.back() + " --ttl 5s --wait 60s -q";
            for (const auto& o : exec_options) exec += " " + o;
            for (int w = 0; w < workers_per_shard; ++w) {
                const auto name = std::to_string(shard) + "-" + std::to_string(w);
                // A line in done<name> per increment its lock covered to the end.
                const std::string script = "for i in $(seq " + std::to_string(increments_per_worker) + "); do " + exec +
                                           " -- sh -c '" + body + "' || exit $?; echo >> '" + dir_ + "/done" + name +
                                           "'; done";
                pids_.push_back(spawn_process({.args = {"/bin/sh", "-c", script},
                                               .env = environment_with({}),
                                               .output_file = dir_ + "/worker" + name}));
                names_.push_back(name);
            }
        }
    }

    const std::string& lock_key(std::size_t shard) const { return lock_keys_.at(shard); }

    // Waits for every worker; each must succeed, and each counter be exact.
    void check_exact(std::chrono::seconds limit)
    {
        wait_for_workers(limit, true);
        for (std::size_t shard = 0; shard < cluster_.shards(); ++shard)
            BOOST_TEST(counters_.cli({"GET", "counter:" + std::to_string(shard)}) ==
                           std::to_string(workers_per_shard * increments_per_worker),
                       "shard " << shard);
    }

    // Waits for every worker: how many increments of `shard` were lost (two holders at once), and how many workers
    // failed (each took the rest of its increments with it: counted apart, not as lost).
    std::pair<int, int> lost_increments(std::size_t shard, std::chrono::seconds limit)
    {
        const int failed = wait_for_workers(limit, false);
        const int counted = std::stoi(counters_.cli({"GET", "counter:" + std::to_string(shard)}));
        int done = 0;  // increments the workers of the shard report done (one line each)
        for (int w = 0; w < workers_per_shard; ++w)
            done += count_lines(dir_ + "/done" + std::to_string(shard) + "-" + std::to_string(w));
        return {done - counted, failed};
    }

private:
    // Each worker's exit, within `limit`; `strict`: each must succeed. Returns how many did not.
    int wait_for_workers(std::chrono::seconds limit, bool strict)
    {
        int failed = 0;
        const auto deadline = steady::now() + limit;
        for (std::size_t i = 0; i < pids_.size(); ++i) {
            int status = 0;
            const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - steady::now());
            const bool exited = wait_for_exit(pids_[i], std::max(left, 1ms), &status);
            if (!exited) stop_process(pids_[i], 100ms);
            const bool ok = exited && exit_status(status) == 0;
            failed += ok ? 0 : 1;
            if (!strict) continue;
            BOOST_TEST(exited, "worker " << names_[i] << " still running");
            BOOST_TEST(ok, "worker " << names_[i] << ": " << file_contents(dir_ + "/worker" + names_[i]));
        }
        return failed;
    }

    static int count_lines(const std::string& file)
    {
        const auto text = file_contents(file);
        return static_cast<int>(std::count(text.begin(), text.end(), '\n'));
    }

    sharded_cluster& cluster_;
    redis_node counters_;
    std::string dir_;
    std::vector<std::string> lock_keys_;
    std::vector<pid_t> pids_;
    std::vector<std::string> names_;
};

}  // namespace

BOOST_AUTO_TEST_CASE(counters_stay_exact_through_a_coordinated_failover)
{
    sharded_cluster cluster;
    counter_run run(cluster);
    std::this_thread::sleep_for(1000ms);
    cluster.failover(0);
    run.check_exact(120s);
}

BOOST_AUTO_TEST_CASE(counters_stay_exact_through_a_killed_master_with_one_replica_ack)
{
    // Two replicas a shard: once one is promoted, the other acknowledges the new master's grants (with one, the
    // shard would refuse every grant from then on: nobody left to acknowledge).
    sharded_cluster cluster({.replicas_per_shard = 2});
    counter_run run(cluster, {"--replica-acks", "1"});
    std::this_thread::sleep_for(1000ms);
    cluster.kill_master(1);
    run.check_exact(120s);
}

// How often a killed master loses a lock without replica acks, in the counter run above (a measurement, not a
// check: doc/cluster.md reports it). Off by default; run it with
// `fault_cluster_fault_test --run_test=how_often_a_killed_master_loses_a_lock_without_acks` and
// REDLOCK_TRIALS=N (default 10).
BOOST_AUTO_TEST_CASE(how_often_a_killed_master_loses_a_lock_without_acks, *boost::unit_test::disabled())
{
    const char* trials_env = std::getenv("REDLOCK_TRIALS");
    const int trials = trials_env ? std::atoi(trials_env) : 10;
    int losing = 0;
    for (int trial = 0; trial < trials; ++trial) {
        sharded_cluster cluster({.replicas_per_shard = 2});
        counter_run run(cluster);
        std::this_thread::sleep_for(1000ms);
        cluster.kill_master(1);
        const auto [lost, failed] = run.lost_increments(1, 120s);
        losing += lost > 0 ? 1 : 0;
        BOOST_TEST_MESSAGE("trial " << trial << ": " << lost << " increments lost, " << failed << " workers failed");
    }
    BOOST_TEST_MESSAGE(losing << " of " << trials << " trials lost an increment");
    BOOST_TEST(trials > 0);
}

BOOST_AUTO_TEST_CASE(counters_stay_exact_through_a_live_migration_of_a_held_locks_slot)
{
    sharded_cluster cluster;
    counter_run run(cluster);
    const auto slot = redlock::detail::key_slot(run.lock_key(2));
    auto& to = cluster.master_of_shard(0);
    std::this_thread::sleep_for(800ms);
    cluster.migrate_begin(slot, to);
    std::this_thread::sleep_for(300ms);  // locks taken and released at the source, ASKed for moved keys
    cluster.migrate_move_keys(slot, to);
    std::this_thread::sleep_for(300ms);
    cluster.migrate_end(slot, to);
    run.check_exact(120s);
}

// A grant the replica never saw dies with its master: held back (SIGSTOP) while the lock is granted, the replica is
// promoted without the key, and a second owner gets the lock the first still holds. With --replica-acks 1 the
// same grant is refused (error::replica_acks) and released: nobody holds what the Cluster forgot.
BOOST_AUTO_TEST_CASE(a_master_killed_after_an_unacknowledged_grant_loses_the_lock_which_acks_refuse)
{
    sharded_cluster cluster;
    asio::io_context ctx;
    redlock::client first(ctx.get_executor(), {cluster_config(cluster.url())});
    redlock::client second(ctx.get_executor(), {cluster_config(cluster.url())});
    const auto key = cluster.key_on_shard(1, "forgotten:");
    auto& master = cluster.master_of_shard(1);
    auto& replica = cluster.replica_of(master);
    std::optional<redlock::lease> held;
    run_coro(ctx, [&]() -> asio::awaitable<void> {
        co_await first.async_connect(asio::use_awaitable);
        co_await second.async_connect(asio::use_awaitable);
        // The replica stopped and cut off: the master's writes from now on reach no replica (a pause alone would
        // not do: what the master sends waits in the replica's socket and is read once it resumes).
        replica.pause();
        master.cli({"CLIENT", "KILL", "TYPE", "replica"});
        // With acks: refused within the ack deadline, and nothing left on the master.
        redlock::mutex acked(first, key,
                             {.ttl = 20'000ms, .wait = 0ms, .replica_acks = 1, .replica_ack_timeout = 300ms});
        const auto started = steady::now();
        auto [ec, none] = co_await acked.async_lock(use_tuple);
        BOOST_TEST(ec == error::replica_acks, ec.message());
        BOOST_TEST((steady::now() - started < 3000ms));
        // The refused grant is released in the background: gone from the master soon.
        const auto gone_by = steady::now() + 3s;
        while (master.cli({"EXISTS", key}) != "0" && steady::now() < gone_by) co_await sleep_for(10ms);
        BOOST_TEST(master.cli({"EXISTS", key}) == "0");
        // Without: granted on the master alone.
        redlock::mutex plain(first, key, {.ttl = 20'000ms, .wait = 0ms});
        held = co_await plain.async_lock(asio::use_awaitable);
    });
    BOOST_TEST_REQUIRE(held.has_value());
    BOOST_TEST(master.cli({"GET", key}) == held->token());
    master.kill();
    replica.resume();
    // The replica, promoted without the key (the live nodes first notice the master is gone: node timeout).
    const auto promoted_by = steady::now() + 30s;
    while (cluster.master_of_shard(1).port() != replica.port() && steady::now() < promoted_by)
        std::this_thread::sleep_for(50ms);
    BOOST_TEST_REQUIRE(cluster.master_of_shard(1).port() == replica.port());
    cluster.wait_healthy(30s);
    run_coro(ctx, [&]() -> asio::awaitable<void> {
        redlock::mutex again(second, key, {.ttl = 20'000ms, .wait = 10'000ms});
        auto [ec, lease] = co_await again.async_lock(use_tuple);
        // The lock is lost: the first owner's lease is still valid by its own clock, and a second owner holds it.
        BOOST_TEST(!ec, ec.message());
        BOOST_TEST(held->validity() > 0ms);
        BOOST_TEST(replica.cli({"GET", key}) == lease.token());
    });
}

// A waiter blocked behind a holder resumes at the release, not at the holder's TTL, when the release happens at a
// new master: after a failover of the key's shard, and after its slot migrated.
BOOST_AUTO_TEST_CASE(waiters_resume_at_a_release_made_at_the_new_master_after_a_failover_and_a_migration)
{
    sharded_cluster cluster;
    asio::io_context ctx;
    redlock::client holder(ctx.get_executor(), {cluster_config(cluster.url())});
    redlock::client waiter(ctx.get_executor(), {cluster_config(cluster.url())});
    for (const bool migrate : {false, true}) {
        BOOST_TEST_CONTEXT((migrate ? "migration" : "failover"))
        {
            const auto key = cluster.key_on_shard(2, migrate ? "migrated:" : "failed-over:");
            // A TTL far longer than the bound below: a waiter that missed the release would sleep that long.
            const redlock::lock_options long_held{.ttl = 30'000ms, .wait = 40'000ms};
            std::optional<steady::time_point> resumed;
            run_coro(ctx, [&]() -> asio::awaitable<void> {
                redlock::mutex m(holder, key, long_held);
                auto lease = co_await m.async_lock(asio::use_awaitable);
                asio::co_spawn(
                    ctx,
                    [&]() -> asio::awaitable<void> {
                        redlock::mutex w(waiter, key, long_held);
                        auto got = co_await w.async_lock(asio::use_awaitable);
                        resumed = steady::now();
                        co_await got.async_release(asio::use_awaitable);
                    },
                    asio::detached);
                co_await sleep_for(300ms);  // the waiter is subscribed and asleep
                // The shard changes on another thread while this one keeps the clients' I/O going.
                std::atomic<bool> changed{false};
                std::thread change([&] {
                    if (migrate)
                        cluster.migrate_slot(redlock::detail::key_slot(key), cluster.master_of_shard(0));
                    else
                        cluster.failover(2);
                    changed = true;
                });
                while (!changed) co_await sleep_for(20ms);
                change.join();
                co_await sleep_for(1500ms);  // redirects followed, subscriptions moved
                const auto released = steady::now();
                co_await lease.async_release(asio::use_awaitable);
                const auto deadline = steady::now() + 10s;
                while (!resumed && steady::now() < deadline) co_await sleep_for(10ms);
                BOOST_TEST_REQUIRE(resumed.has_value());
                BOOST_TEST_MESSAGE("resumed "
                                   << std::chrono::duration_cast<std::chrono::milliseconds>(*resumed - released).count()
                                   << " ms after the release");
                BOOST_TEST(
                    (*resumed - released < 2000ms),
                    "resumed " << std::chrono::duration_cast<std::chrono::milliseconds>(*resumed - released).count()
                               << " ms after the release");
            });
        }
    }
}
