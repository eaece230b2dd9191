// Processes of the read-write lock killed with SIGKILL, on 1 and 3 nodes: a killed reader frees its share at its own
// TTL (a live reader beside it, extending, does not keep it), and a writer killed while it waited stops holding
// readers back once its mark's waiter TTL has passed.
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <common/processes/subprocess.hpp>
#include <common/run_coro.hpp>
#include <common/servers/redis_node.hpp>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
using namespace redlock::test;
using std::chrono::steady_clock;

namespace {

const std::string key = "rw";

// `redlock exec` in the background, running `script` under the lock.
pid_t spawn_exec(const cluster& nodes, const std::vector<std::string>& flags, const std::string& script,
                 const std::string& log)
{
    std::vector<std::string> args{REDLOCK_CLI_PATH, "exec", "--nodes", comma_joined(nodes.urls()), "--key", key};
    args.insert(args.end(), flags.begin(), flags.end());
    for (const auto& a : {"--", "sh", "-c"}) args.emplace_back(a);
    args.push_back(script);
    return spawn_process({args, environment_with({}), log});
}

command_result run_exec(const cluster& nodes, const std::vector<std::string>& flags)
{
    std::vector<std::string> args{REDLOCK_CLI_PATH, "exec", "--nodes", comma_joined(nodes.urls()), "--key", key};
    args.insert(args.end(), flags.begin(), flags.end());
    for (const auto& a : {"--", "true"}) args.emplace_back(a);
    return run_command(args, 30'000ms);
}

// A holder's script: wait until `path` exists (at most 30 s, so that a shell left behind by a failed check ends).
std::string until_exists(const std::string& path)
{
    return "i=0; while [ ! -e " + path + " ] && [ $i -lt 1500 ]; do sleep 0.02; i=$((i+1)); done";
}

// How many nodes hold `count` live entries (scored after the node's time) in the lock's sorted set `set` ("readers"
// or "writers"): an entry whose time passed counts as gone, as every script of the lock drops it.
std::size_t nodes_with(const cluster& nodes, const std::string& set, std::size_t count)
{
    std::size_t n = 0;
    for (std::size_t i = 0; i < nodes.size(); ++i) {
        const auto live = nodes[i].cli({"EVAL",
                                        "local t = redis.call('TIME') return redis.call('ZCOUNT', KEYS[1], '(' .. "
                                        "(t[1] * 1000 + math.floor(t[2] / 1000)), '+inf')",
                                        "1", "{rw}:" + set});
        if (live == std::to_string(count)) ++n;
    }
    return n;
}

}  // namespace

// Reader A (ttl 1 s) is killed while reader B (ttl 3 s: extended every second) holds and extends beside it. Once B
// lets go, three of A's TTLs later, a writer's single attempt succeeds: A's share ended at A's own TTL. Were the
// readers' TTL shared (one expiry for the set, pushed by every reader's extension), B's extensions would have kept
// A's share alive, and the writer would be refused.
BOOST_AUTO_TEST_CASE(a_killed_reader_frees_its_share_at_its_own_ttl)
{
    for (std::size_t n : {1u, 3u}) {
        BOOST_TEST_CONTEXT(n << " nodes")
        {
            cluster nodes(n);
            const auto dir = make_temp_dir("redlock-rw-fault-");
            const auto log = dir + "/log";
            const auto gate = dir + "/go";
            const auto doomed = spawn_exec(nodes, {"--shared", "--ttl", "1s"}, "sleep 60", log);
            const auto live = spawn_exec(nodes, {"--shared", "--ttl", "3s"}, until_exists(gate), log);
            const auto quorum = n / 2 + 1;
            BOOST_REQUIRE_MESSAGE(wait_until([&] { return nodes_with(nodes, "readers", 2) >= quorum; }, 10'000ms),
                                  file_contents(log));
            ::kill(doomed, SIGKILL);
            int status = 0;
            BOOST_REQUIRE(wait_for_exit(doomed, 5000ms, &status));
            auto refused = run_exec(nodes, {"--wait", "0"});
            BOOST_TEST(refused.exit_code == 75, "a writer beside a reader: " << refused.err);
            std::this_thread::sleep_for(3000ms);  // B extends its own entry meanwhile
            BOOST_TEST(nodes_with(nodes, "readers", 1) >= quorum, "A's entry outlived its TTL");
            std::ofstream(gate).put('\n');
            BOOST_REQUIRE(wait_for_exit(live, 10'000ms, &status));
            BOOST_TEST(exit_status(status) == 0, file_contents(log));
            auto writer = run_exec(nodes, {"--wait", "0"});
            BOOST_TEST(writer.exit_code == 0, "the killed reader still holds: " << writer.err);
            std::filesystem::remove_all(dir);
        }
    }
}

// A writer killed while it waited behind a reader leaves its mark: a reader that asks at once is refused although
// only a reader holds; one that waits gets in once the mark's waiter TTL has passed, the first reader still holding.
BOOST_AUTO_TEST_CASE(a_killed_waiting_writer_stops_blocking_readers_within_its_waiter_ttl)
{
    for (std::size_t n : {1u, 3u}) {
        BOOST_TEST_CONTEXT(n << " nodes")
        {
            cluster nodes(n);
            const auto dir = make_temp_dir("redlock-rw-fault-");
            const auto log = dir + "/log";
            const auto gate = dir + "/go";
            const auto quorum = n / 2 + 1;
            const auto reader = spawn_exec(nodes, {"--shared"}, until_exists(gate), log);
            BOOST_REQUIRE(wait_until([&] { return nodes_with(nodes, "readers", 1) >= quorum; }, 10'000ms));
            const auto writer = spawn_exec(nodes, {"--waiter-ttl", "3s"}, "true", log);
            BOOST_REQUIRE_MESSAGE(wait_until([&] { return nodes_with(nodes, "writers", 1) >= quorum; }, 10'000ms),
                                  "the writer's wait is not marked: " << file_contents(log));
            ::kill(writer, SIGKILL);
            const auto killed = steady_clock::now();
            int status = 0;
            BOOST_REQUIRE(wait_for_exit(writer, 5000ms, &status));
            auto blocked = run_exec(nodes, {"--shared", "--wait", "0"});
            BOOST_TEST(blocked.exit_code == 75, "a reader passed the writer's mark: " << blocked.err);
            auto late = run_exec(nodes, {"--shared", "--wait", "20s"});
            const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(steady_clock::now() - killed);
            BOOST_TEST(late.exit_code == 0, "the dead writer still blocks readers: " << late.err);
            BOOST_TEST_MESSAGE("a reader got in " << took.count() << " ms after the waiting writer was killed");
            // Its waiter TTL (3 s) after its last attempt, and a margin: not the marks key's expiry (6 s after it).
            BOOST_TEST(took.count() < 4500, "the dead writer's mark outlived its waiter TTL");
            BOOST_TEST(wait_for_exit(reader, 100ms) == false, "the first reader must still hold");
            std::ofstream(gate).put('\n');
            BOOST_REQUIRE(wait_for_exit(reader, 10'000ms, &status));
            BOOST_TEST(exit_status(status) == 0);
            std::filesystem::remove_all(dir);
        }
    }
}
