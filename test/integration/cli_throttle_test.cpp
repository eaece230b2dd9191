// `redlock throttle` as a process: the command runs in its place (same pid, its exit code, the caller's
// descriptors only), every exit code, waiting for room, a command not found takes no room, and `redlock bench
// --scenario limiter`'s JSON.
#include <boost/json/src.hpp>  // header-only Boost.JSON, to parse `bench --json`
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <common/processes/subprocess.hpp>
#include <common/run_coro.hpp>
#include <common/servers/redis_node.hpp>
#include <csignal>
#include <filesystem>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
using namespace redlock::test;
using std::chrono::steady_clock;

namespace {

constexpr auto cli_limit = std::chrono::milliseconds(20'000);

command_result redlock_cli(std::vector<std::string> args, std::chrono::milliseconds limit = cli_limit)
{
    args.insert(args.begin(), REDLOCK_CLI_PATH);
    return run_command(args, limit);
}

// `redlock throttle --nodes URL --key KEY` and the rest.
command_result throttle(const redis_node& node, const std::string& key, std::vector<std::string> rest)
{
    std::vector<std::string> args{"throttle", "--nodes", node.url(), "--key", key};
    args.insert(args.end(), rest.begin(), rest.end());
    return redlock_cli(args);
}

long long elapsed_ms(steady_clock::time_point since)
{
    return std::chrono::duration_cast<std::chrono::milliseconds>(steady_clock::now() - since).count();
}

}  // namespace

BOOST_AUTO_TEST_SUITE(cli_throttle)

// Nothing is held once the room is taken: the command replaces redlock (its pid, its exit code, the caller's
// descriptors and no socket of ours).
BOOST_AUTO_TEST_CASE(the_command_runs_in_redlocks_place_with_its_own_exit_code)
{
    redis_node node;
    const auto dir = make_temp_dir("redlock-throttle-");
    const auto out = dir + "/out";
    const pid_t pid =
        spawn_process({.args = {REDLOCK_CLI_PATH, "throttle", "--nodes", node.url(), "--key", "job", "--rate", "10/s",
                                "--", "sh", "-c", "echo pid $$; ls /proc/$$/fd; exit 3"},
                       .env = environment_with({}),
                       .output_file = out});
    int status = 0;
    BOOST_REQUIRE(wait_for_exit(pid, 10s, &status));
    BOOST_TEST(exit_status(status) == 3);
    const auto text = file_contents(out);
    BOOST_TEST(text.find("pid " + std::to_string(pid) + "\n") != std::string::npos, "output: " << text);
    // The same command run directly lists the same descriptors: none of redlock's leaked into it.
    const auto direct = run_command({"/bin/sh", "-c", "ls /proc/$$/fd"}, 5s);  // run_command does not search PATH
    BOOST_REQUIRE_EQUAL(direct.exit_code, 0);
    BOOST_REQUIRE(!direct.out.empty());
    BOOST_TEST(text.find(direct.out) != std::string::npos, "output: " << text << "; directly: " << direct.out);
    std::filesystem::remove_all(dir);

    BOOST_TEST(throttle(node, "job", {"--rate", "10/s", "--", "false"}).exit_code == 1);
    BOOST_TEST(throttle(node, "job", {"--rate", "10/s", "--", "sh", "-c", "kill -KILL $$"}).exit_code == 128 + SIGKILL);
}

BOOST_AUTO_TEST_CASE(without_a_command_it_exits_0_when_admitted_and_75_when_no_room_came_within_the_wait)
{
    redis_node node;
    auto r = throttle(node, "minute", {"--rate", "1/m"});
    BOOST_TEST(r.exit_code == 0, r.err);
    BOOST_TEST(r.err.empty(), r.err);  // nothing to say by default
    r = throttle(node, "minute", {"--rate", "1/m", "--wait", "0", "--", "sh", "-c", "echo ran"});
    BOOST_TEST(r.exit_code == 75);
    BOOST_TEST(r.out.find("ran") == std::string::npos);
    BOOST_TEST(r.err.find("no room in 'minute'") != std::string::npos, r.err);
    BOOST_TEST(r.err.find("in one try (--wait 0)") != std::string::npos, r.err);
    // The next room is a minute away: a wait of 10 s gives up at once instead of sleeping through it.
    const auto start = steady_clock::now();
    r = throttle(node, "minute", {"--rate", "1/m", "--wait", "10s"});
    BOOST_TEST(r.exit_code == 75);
    BOOST_TEST(elapsed_ms(start) < 5000);
    BOOST_TEST(r.err.find("within --wait 10s") != std::string::npos, r.err);
}

// Five runs at 5/s without burst: each waits for its turn, 200 ms after the one before.
BOOST_AUTO_TEST_CASE(it_waits_for_room_and_is_admitted_at_the_rate)
{
    redis_node node;
    const auto start = steady_clock::now();
    for (int i = 0; i < 5; ++i) {
        auto r = throttle(node, "paced", {"--rate", "5/s", "-v"});
        BOOST_TEST(r.exit_code == 0, r.err);
        if (i == 0) {
            BOOST_TEST(r.err.find("throttle 'paced' (gcra 5/s, burst 0) on " + node.url()) != std::string::npos, r.err);
            BOOST_TEST(r.err.find("remaining 0 of 1") != std::string::npos, r.err);
        }
    }
    BOOST_TEST(elapsed_ms(start) >= 4 * 200 - 5);  // the node's clock and ours agree within a few ms
}

BOOST_AUTO_TEST_CASE(usage_errors_exit_64_before_any_io)
{
    redis_node node;
    const std::vector<std::vector<std::string>> bad{
        {"--rate", "10/s"},                                       // no --key
        {"--key", "", "--rate", "10/s"},                          // empty key
        {"--key", "k"},                                           // no --rate
        {"--key", "k", "--rate", "0/s"},                          // rate <= 0
        {"--key", "k", "--rate", "10/s", "--burst", "-1"},        // burst < 0
        {"--key", "k", "--rate", "10/s", "--cost", "0"},          // cost <= 0
        {"--key", "k", "--rate", "10/s", "--strategy", "leaky"},  // no such strategy
        {"--key", "k", "--rate", "10/s", "--strategy", "fixed-window", "--burst", "2"},
        {"--key", "k", "--rate", "10/s", "--wait", "soon"},  // not a duration
        {"--key", "k", "--rate", "10/s", "extra"},           // the command goes after --
        {"--key", "k", "--rate", "10/s", "--"},              // nothing after --
    };
    for (const auto& args : bad) {
        std::vector<std::string> full{"throttle", "--nodes", node.url()};
        full.insert(full.end(), args.begin(), args.end());
        auto r = redlock_cli(full);
        BOOST_TEST(r.exit_code == 64, r.err);
        BOOST_TEST(r.err.find("redlock throttle --help") != std::string::npos, r.err);
    }
    // Refused before any call: a cost no wait can admit (by the library), and more than one node (by the command line:
    // a rate limiter takes one Redis deployment).
    auto r = throttle(node, "k", {"--rate", "10/s", "--burst", "2", "--cost", "4"});
    BOOST_TEST(r.exit_code == 64);
    BOOST_TEST(r.err.find("no wait can admit it") != std::string::npos, r.err);
    r = redlock_cli({"throttle", "--nodes", node.url() + "," + node.url() + "/1", "--key", "k", "--rate", "10/s"});
    BOOST_TEST(r.exit_code == 64);
    BOOST_TEST(r.err.find("exactly one node") != std::string::npos, r.err);
    BOOST_TEST(node.cli({"DBSIZE"}) == "0");
    BOOST_TEST(redlock_cli({"throttle", "--help"}).exit_code == 0);
}

// A typo in the command must not use up room: it is looked up first.
BOOST_AUTO_TEST_CASE(a_command_that_is_not_found_exits_127_and_takes_no_room)
{
    redis_node node;
    auto r = throttle(node, "once", {"--rate", "1/m", "--", "no-such-command-here"});
    BOOST_TEST(r.exit_code == 127);
    BOOST_TEST(node.cli({"DBSIZE"}) == "0");
    BOOST_TEST(throttle(node, "once", {"--rate", "1/m", "--wait", "0"}).exit_code == 0);
}

BOOST_AUTO_TEST_CASE(an_unreachable_node_exits_69_when_the_wait_runs_out)
{
    const auto url = "redis://127.0.0.1:" + std::to_string(pick_free_port());
    const auto start = steady_clock::now();
    auto r = redlock_cli({"throttle", "--nodes", url, "--key", "k", "--rate", "10/s", "--wait", "500ms"});
    BOOST_TEST(r.exit_code == 69);
    BOOST_TEST(elapsed_ms(start) >= 450);
    BOOST_TEST(r.err.find("could not ask the rate limiter 'k'") != std::string::npos, r.err);
}

// A cron job waiting for room forever must not hang silently on a node that is down: a note every 10 s.
BOOST_AUTO_TEST_CASE(a_wait_on_an_unreachable_node_says_so_every_10_s)
{
    const auto url = "redis://127.0.0.1:" + std::to_string(pick_free_port());
    auto r = redlock_cli({"throttle", "--nodes", url, "--key", "k", "--rate", "10/s", "--wait", "11s"});
    BOOST_TEST(r.exit_code == 69);
    BOOST_TEST(r.err.find("redlock: still waiting for room in 'k' after 10 s") != std::string::npos, r.err);
    BOOST_TEST(r.err.find(url) != std::string::npos, r.err);  // the node's line says why
}

BOOST_AUTO_TEST_CASE(the_node_comes_from_the_environment_when_not_given)
{
    redis_node node;
    ::setenv("REDLOCK_NODES", node.url().c_str(), 1);
    auto r = redlock_cli({"throttle", "--key", "env", "--rate", "10/s"});
    ::unsetenv("REDLOCK_NODES");
    BOOST_TEST(r.exit_code == 0, r.err);
    BOOST_TEST(node.cli({"EXISTS", "env"}) == "1");
}

BOOST_AUTO_TEST_CASE(a_signal_while_waiting_ends_the_wait_without_running_the_command)
{
    redis_node node;
    BOOST_REQUIRE(throttle(node, "busy", {"--rate", "1/m"}).exit_code == 0);
    const auto dir = make_temp_dir("redlock-throttle-");
    const auto out = dir + "/out";
    const pid_t pid = spawn_process({.args = {REDLOCK_CLI_PATH, "throttle", "--nodes", node.url(), "--key", "busy",
                                              "--rate", "1/m", "--", "sh", "-c", "echo ran"},
                                     .env = environment_with({}),
                                     .output_file = out});
    std::this_thread::sleep_for(1000ms);  // sleeping until the next room, a minute away, by now
    ::kill(pid, SIGINT);
    int status = 0;
    const bool exited = wait_for_exit(pid, 3s, &status);
    if (!exited) stop_process(pid, 1s);
    BOOST_REQUIRE(exited);
    BOOST_TEST(exit_status(status) == 128 + SIGINT);
    const auto text = file_contents(out);
    BOOST_TEST(text.find("ran") == std::string::npos);
    BOOST_TEST(text.find("interrupted by SIGINT while waiting for room in 'busy'") != std::string::npos, text);
    std::filesystem::remove_all(dir);
}

BOOST_AUTO_TEST_CASE(bench_limiter_json_has_the_documented_keys)
{
    redis_node node;
    auto r = redlock_cli({"bench", "--nodes", node.url(), "--scenario", "limiter", "--duration", "500ms", "--workers",
                          "4", "--rate", "100/s", "--burst", "10", "--json"});
    BOOST_REQUIRE_MESSAGE(r.exit_code == 0, r.err);
    boost::json::error_code ec;
    auto doc = boost::json::parse(r.out, ec);
    BOOST_REQUIRE_MESSAGE(!ec && doc.is_object(), "not JSON: " << r.out);
    const auto& o = doc.as_object();
    std::vector<std::string> keys;
    for (const auto& kv : o) keys.emplace_back(kv.key());
    BOOST_TEST(keys == (std::vector<std::string>{"scenario", "fencing", "nodes", "clients", "workers", "ops",
                                                 "ops_per_sec", "cpu_us_per_op", "user_us_per_op", "sys_us_per_op",
                                                 "allocs_per_op", "acquire_us", "handoff_us", "strategy", "rate",
                                                 "burst", "admitted", "limited", "errors"}),
               boost::test_tools::per_element());
    BOOST_TEST(o.at("scenario").as_string() == "limiter");
    BOOST_TEST(o.at("rate").as_string() == "100/s");
    const auto admitted = o.at("admitted").as_int64();
    BOOST_TEST(admitted + o.at("limited").as_int64() == o.at("ops").as_int64());
    // 4 keys of 100/s with a burst of 10, for about half a second: never more than their limit.
    BOOST_TEST(admitted <= 4 * (11 + 100 * 600 / 1000), "admitted " << admitted);
    BOOST_TEST(o.at("errors").as_int64() == 0);

    r = redlock_cli(
        {"bench", "--nodes", node.url() + "," + node.url() + "/1", "--scenario", "limiter", "--duration", "200ms"});
    BOOST_TEST(r.exit_code == 64);
    BOOST_TEST(r.err.find("exactly one node") != std::string::npos, r.err);
    BOOST_TEST(redlock_cli({"bench", "--nodes", node.url(), "--rate", "10/s"}).exit_code == 64);  // limiter only
}

BOOST_AUTO_TEST_SUITE_END()
