// The small programs of example/ run against real nodes as doc/examples.md says to run them: each exits 0 (each
// checks its own claims: exclusion, the quorum rule, the fencing refusal...) and prints what the docs show.
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <common/redis_node.hpp>
#include <common/subprocess.hpp>
#include <string>
#include <vector>

using namespace std::chrono_literals;
using namespace redlock::test;

namespace {

// Runs `program` with the node list as its argument; returns its stdout.
std::string run_example(const std::string& program, const std::string& nodes, std::chrono::milliseconds limit = 60s)
{
    const auto result = run_command({program, nodes}, limit);
    BOOST_TEST_MESSAGE(program << ":\n" << result.out << result.err);
    BOOST_TEST(result.exit_code == 0, program << " exited " << result.exit_code << ":\n" << result.err);
    return result.out;
}

bool has(const std::string& output, const std::string& text)
{
    return output.find(text) != std::string::npos;
}

}  // namespace

BOOST_AUTO_TEST_CASE(quickstart_pipelines_and_coalesces)
{
    redis_node node;
    const auto out = run_example(REDLOCK_EXAMPLE_QUICKSTART, node.url());
    BOOST_TEST(has(out, "GET greeting -> hello"));
    BOOST_TEST(has(out, "10000 concurrent INCRs: 0 failed"));
    BOOST_TEST(has(out, "parsed a list of 3 nodes, the last redis://10.0.0.3:6379"));
}

BOOST_AUTO_TEST_CASE(lock_basic_locks_on_one_node_and_on_five)
{
    cluster nodes(5);
    const auto out = run_example(REDLOCK_EXAMPLE_LOCK_BASIC, comma_joined(nodes.urls()));
    BOOST_TEST(has(out, "-- 1 node(s), quorum 1"));
    BOOST_TEST(has(out, "-- 5 node(s), quorum 3"));
    BOOST_TEST(has(out, "a second owner's try_lock: not acquired: held by others"));
}

BOOST_AUTO_TEST_CASE(redlock_five_nodes_survives_two_nodes_down_and_not_three)
{
    cluster nodes(5);
    const auto out = run_example(REDLOCK_EXAMPLE_REDLOCK_FIVE_NODES, comma_joined(nodes.urls()));
    BOOST_TEST(has(out, "-- 5 nodes: a lock needs 3 grants, so 2 nodes may fail"));
    BOOST_TEST(has(out, "-- 2 of 5 nodes down\nlock: acquired"));
    BOOST_TEST(has(out, "-- 3 of 5 nodes down\nlock: no quorum"));
}

BOOST_AUTO_TEST_CASE(with_lock_watchdog_keeps_the_lock_and_reports_its_loss)
{
    cluster nodes(3);
    const auto out = run_example(REDLOCK_EXAMPLE_WITH_LOCK_WATCHDOG, comma_joined(nodes.urls()));
    BOOST_TEST(has(out, "the body returned 6"));
    BOOST_TEST(has(out, "with_lock threw after"));
}

BOOST_AUTO_TEST_CASE(callbacks_and_futures_take_the_lock)
{
    cluster nodes(3);
    const auto out = run_example(REDLOCK_EXAMPLE_CALLBACKS, comma_joined(nodes.urls()));
    BOOST_TEST(has(out, "callbacks: released"));
    BOOST_TEST(has(out, "future: released"));
}

BOOST_AUTO_TEST_CASE(fencing_refuses_the_stalled_holder)
{
    cluster nodes(3);
    const auto out = run_example(REDLOCK_EXAMPLE_FENCING, comma_joined(nodes.urls()));
    BOOST_TEST(has(out, "the stale holder was fenced out"));
}

BOOST_AUTO_TEST_CASE(semaphore_caps_the_jobs)
{
    cluster nodes(3);
    const auto out = run_example(REDLOCK_EXAMPLE_SEMAPHORE, comma_joined(nodes.urls()));
    BOOST_TEST(!has(out, "beside 3 other(s)"));  // a limit of 3: never a fourth job at once
    BOOST_TEST(has(out, "reindex holds 2 permits"));
}

BOOST_AUTO_TEST_CASE(rate_limit_admits_the_burst_and_refuses_n_nodes)
{
    cluster nodes(3);
    const auto out = run_example(REDLOCK_EXAMPLE_RATE_LIMIT, comma_joined(nodes.urls()));
    BOOST_TEST(has(out, "21 of 25 calls admitted at once"));
    BOOST_TEST(has(out, "429 Too Many Requests"));
    BOOST_TEST(has(out, "a limiter on a client of 3 nodes: invalid argument"));
}

BOOST_AUTO_TEST_CASE(cache_loads_once)
{
    cluster nodes(3);
    const auto out = run_example(REDLOCK_EXAMPLE_CACHE, comma_joined(nodes.urls()));
    BOOST_TEST(has(out, "user:ada -> Ada Lovelace (a miss: 1 query)"));
    // The ten concurrent callers and the hit after them: one more query in all.
    std::size_t alans = 0;
    for (auto at = out.find("user:alan -> Alan Turing, 2 database queries so far\n"); at != std::string::npos;
         at = out.find("user:alan -> Alan Turing, 2 database queries so far\n", at + 1))
        ++alans;
    BOOST_TEST(alans == 11u);
    BOOST_TEST(!has(out, "user:alan -> Alan Turing, 3"));
    BOOST_TEST(has(out,
                   "user:nobody -> (no such user), 3 database queries so far\n"
                   "user:nobody -> (no such user), 3 database queries so far\n"));
    BOOST_TEST(has(out, "user:mallory -> (no such user), 0 database queries (the Bloom filter answered)"));
}

// The example checks its counts itself: with a first node (the store) that refuses every write (maxmemory 1 byte,
// noeviction), nothing is cached, the hit after the ten callers queries the database again, and the example
// says so and exits 1 (the lock still has 2 of 3 nodes).
BOOST_AUTO_TEST_CASE(cache_exits_1_on_a_wrong_count)
{
    cluster nodes(3);
    BOOST_REQUIRE(nodes[0].cli({"CONFIG", "SET", "maxmemory", "1"}) == "OK");
    const auto result = run_command({REDLOCK_EXAMPLE_CACHE, comma_joined(nodes.urls())}, 60s);
    BOOST_TEST_MESSAGE("cache:\n" << result.out << result.err);
    BOOST_TEST(result.exit_code == 1);
    BOOST_TEST(has(result.err, "error: 3 database queries after a hit, expected 2"), result.err);
}

BOOST_AUTO_TEST_CASE(the_tutorial_program_locks_and_releases)
{
    redis_node node;
    const auto out = run_example(REDLOCK_EXAMPLE_TUTORIAL, node.url());
    BOOST_TEST(has(out, "locked tutorial:report after"));
    BOOST_TEST(has(out, "released"));
}
