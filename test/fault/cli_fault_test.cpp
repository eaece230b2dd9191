// `redlock exec` when the lease is lost while the command runs: nodes killed under the watchdog, the TTL
// running out without it, a command that ignores the kill signal.
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <common/processes/subprocess.hpp>
#include <common/run_coro.hpp>
#include <common/servers/redis_node.hpp>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <sys/wait.h>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
using namespace redlock::test;
using std::chrono::steady_clock;

namespace {

long long elapsed_ms(steady_clock::time_point since)
{
    return std::chrono::duration_cast<std::chrono::milliseconds>(steady_clock::now() - since).count();
}

// A `redlock exec` process whose output lands in a temp file; stopped (and reaped) at the end of the test.
class cli_process {
public:
    explicit cli_process(std::vector<std::string> args) : dir_(make_temp_dir("redlock-cli-fault-"))
    {
        args.insert(args.begin(), REDLOCK_CLI_PATH);
        pid_ = spawn_process({.args = args, .env = environment_with({}), .output_file = output_path()});
    }
    ~cli_process()
    {
        if (!reaped_) stop_process(pid_, 2s);
        std::filesystem::remove_all(dir_);
    }

    std::string output_path() const { return dir_ + "/out"; }
    std::string output() const { return file_contents(output_path()); }

    // The exit code, or -1 if it is still running after `limit`.
    int wait(std::chrono::milliseconds limit)
    {
        int status = 0;
        if (!wait_for_exit(pid_, limit, &status)) return -1;
        reaped_ = true;
        return exit_status(status);
    }

private:
    std::string dir_;
    pid_t pid_ = -1;
    bool reaped_ = false;
};

std::size_t nodes_with_key(const cluster& nodes, const std::string& key)
{
    std::size_t n = 0;
    for (std::size_t i = 0; i < nodes.size(); ++i)
        if (nodes[i].running() && nodes[i].cli({"EXISTS", key}) == "1") ++n;
    return n;
}

bool process_alive(pid_t pid)
{
    return ::kill(pid, 0) == 0;
}

std::string helper_path(const std::string& name)
{
    return std::string(REDLOCK_TEST_HELPER_DIR) + "/helper_" + name;
}

// When helper_signal_logger got the signal `name` ("SIGTERM"), on our steady_clock (CLOCK_MONOTONIC).
std::vector<steady_clock::time_point> signal_times(const std::string& log, const std::string& name)
{
    std::vector<steady_clock::time_point> out;
    std::istringstream in(file_contents(log));
    std::string signal;
    long long ns = 0;
    std::string rest;
    while (in >> signal >> ns && std::getline(in, rest))
        if (signal == name) out.emplace_back(std::chrono::nanoseconds(ns));
    return out;
}

// The earliest a lease of `ttl` taken after `started` can end: the validity of a grant that began then
// (ttl - drift; the library's default drift is 1% + 2 ms). Extensions only move the end later.
steady_clock::time_point earliest_lease_end(steady_clock::time_point started, std::chrono::milliseconds ttl)
{
    return started + ttl - ttl / 100 - 2ms;
}

long long ms_between(steady_clock::time_point from, steady_clock::time_point to)
{
    return std::chrono::duration_cast<std::chrono::milliseconds>(to - from).count();
}

}  // namespace

BOOST_AUTO_TEST_SUITE(cli_fault)

BOOST_AUTO_TEST_CASE(killing_3_of_5_nodes_stops_the_command_and_exits_70)
{
    cluster nodes(5);
    cli_process p({"exec", "--nodes", comma_joined(nodes.urls()), "--key", "doomed", "--ttl", "1500ms", "--", "sh",
                   "-c", "echo child=$$; exec sleep 30"});
    BOOST_REQUIRE(wait_until([&] { return p.output().find("child=") != std::string::npos; }, 10s));
    const auto text = p.output();
    const pid_t child = std::stoi(text.substr(text.find("child=") + 6));
    std::this_thread::sleep_for(600ms);  // a few watchdog extensions in
    BOOST_TEST(nodes_with_key(nodes, "doomed") == 5u);

    const auto killed_at = steady_clock::now();
    for (std::size_t i = 0; i < 3; ++i) nodes[i].kill();
    const int code = p.wait(10s);
    const auto took = elapsed_ms(killed_at);
    BOOST_TEST(code == 70, "output: " << p.output());
    // Stopped --kill-grace (here capped at ttl / 2) before the end of the validity, which is at most the TTL
    // after the last extension and at least 2/3 of it: not at once, not after the lease ended.
    BOOST_TEST(took < 6000, "took " << took << " ms");
    BOOST_TEST(took >= 200, "took " << took << " ms");
    BOOST_TEST(p.output().find("could not extend the lease on 'doomed'") != std::string::npos,
               "output: " << p.output());
    BOOST_TEST(!process_alive(child));
}

// Client tracking: the key deleted on 2 of 3 nodes under `--ttl 30s` stops the command and exits 70 at once, not at
// the next extension (10 s away); deleted on 1 of 3, the command runs on and the key is back there at the extension.
BOOST_AUTO_TEST_CASE(keys_deleted_on_a_quorum_stop_the_command_at_once)
{
    cluster nodes(3);
    cli_process p({"exec", "--nodes", comma_joined(nodes.urls()), "--key", "gone", "--ttl", "30s", "--", "sh", "-c",
                   "echo child=$$; exec sleep 60"});
    BOOST_REQUIRE(wait_until([&] { return p.output().find("child=") != std::string::npos; }, 10s));
    BOOST_REQUIRE(wait_until([&] { return nodes_with_key(nodes, "gone") == 3u; }, 5s));
    nodes[0].cli({"DEL", "gone"});
    std::this_thread::sleep_for(300ms);
    BOOST_TEST(p.wait(0ms) == -1, "one node of three lost it: the command must run on; " << p.output());
    const auto deleted_at = steady_clock::now();
    nodes[1].cli({"DEL", "gone"});
    const int code = p.wait(10s);
    const auto took = elapsed_ms(deleted_at);
    BOOST_TEST(code == 70, "output: " << p.output());
    BOOST_TEST_MESSAGE("redlock exec exited " << took << " ms after the second DEL");
    BOOST_TEST(took < 1000, "took " << took << " ms");
    BOOST_TEST(p.output().find("missing on 2 of 3 nodes") != std::string::npos, "output: " << p.output());
}

// Once the extensions keep failing, the command gets --kill-signal --kill-grace before the lease's validity
// ends, so that it is gone before anyone else can take the lock.
BOOST_AUTO_TEST_CASE(failing_extensions_signal_the_command_kill_grace_before_the_lease_ends)
{
    cluster nodes(5);
    const auto dir = make_temp_dir("redlock-cli-fault-");
    const auto log = dir + "/signals";
    const auto started = steady_clock::now();
    // The first extension comes 1 s after the grant: the nodes die before it (the lease then ends 2968 ms after
    // the grant), and the SIGTERM is due 1200 ms before that, which leaves redlock 1200 ms to start and lock.
    cli_process p({"exec", "--nodes", comma_joined(nodes.urls()), "--key", "early", "--ttl", "3s", "--kill-grace",
                   "1200ms", "--", helper_path("signal_logger"), log});
    BOOST_REQUIRE(wait_until([&] { return p.output().find("ready") != std::string::npos; }, 10s));
    const auto killed_at = steady_clock::now();
    for (std::size_t i = 0; i < 3; ++i) nodes[i].kill();
    const int code = p.wait(10s);
    BOOST_TEST(code == 70, "output: " << p.output());
    const auto terms = signal_times(log, "SIGTERM");
    BOOST_REQUIRE_MESSAGE(terms.size() == 1u, "signals: " << file_contents(log) << "output: " << p.output());
    const auto lease_end = earliest_lease_end(started, 3000ms);
    BOOST_TEST((terms[0] < lease_end), "SIGTERM " << ms_between(started, terms[0]) << " ms after the start; the lease "
                                                  << "ends " << ms_between(started, lease_end) << " ms after at least");
    BOOST_TEST((terms[0] > killed_at), "SIGTERM before the nodes were killed");
    BOOST_TEST(p.output().find("could not extend the lease on 'early'") != std::string::npos, "output: " << p.output());
    std::filesystem::remove_all(dir);
}

BOOST_AUTO_TEST_CASE(without_the_watchdog_the_command_is_stopped_kill_grace_before_the_ttl_runs_out)
{
    cluster nodes(3);
    const auto dir = make_temp_dir("redlock-cli-fault-");
    const auto log = dir + "/signals";
    const auto started = steady_clock::now();
    cli_process p({"exec", "--nodes", comma_joined(nodes.urls()), "--key", "short", "--ttl", "1000ms", "--no-watchdog",
                   "--kill-grace", "300ms", "--", helper_path("signal_logger"), log});
    const int code = p.wait(10s);
    BOOST_TEST(code == 70, "output: " << p.output());
    const auto terms = signal_times(log, "SIGTERM");
    BOOST_REQUIRE_MESSAGE(terms.size() == 1u, "signals: " << file_contents(log) << "output: " << p.output());
    const auto at = ms_between(started, terms[0]);
    BOOST_TEST((terms[0] < earliest_lease_end(started, 1000ms)), "SIGTERM " << at << " ms after the start");
    BOOST_TEST(at >= 600, "SIGTERM " << at << " ms after the start: the validity is 988 ms, the grace 300 ms");
    BOOST_TEST(p.output().find("--no-watchdog") != std::string::npos, "output: " << p.output());
    std::filesystem::remove_all(dir);
}

// A long --kill-grace is capped at half the TTL: a command under a short lease is not stopped at once.
BOOST_AUTO_TEST_CASE(a_kill_grace_longer_than_half_the_ttl_is_capped)
{
    cluster nodes(3);
    const auto start = steady_clock::now();
    cli_process p({"exec", "--nodes", comma_joined(nodes.urls()), "--key", "capped", "--ttl", "1000ms", "--no-watchdog",
                   "--kill-grace", "5s", "--", "sleep", "30"});
    const int code = p.wait(10s);
    const auto took = elapsed_ms(start);
    BOOST_TEST(code == 70, "output: " << p.output());
    BOOST_TEST((took >= 450 && took < 3000), "took " << took << " ms");
}

BOOST_AUTO_TEST_CASE(a_command_that_ignores_the_kill_signal_gets_kill_after_the_grace)
{
    cluster nodes(3);
    const auto start = steady_clock::now();
    // `trap '' TERM` is inherited by sleep: only SIGKILL ends them.
    cli_process p({"exec", "--nodes", comma_joined(nodes.urls()), "--key", "stubborn", "--ttl", "800ms",
                   "--no-watchdog", "--kill-grace", "300ms", "--", "sh", "-c", "trap '' TERM; sleep 30; sleep 30"});
    const int code = p.wait(10s);
    const auto took = elapsed_ms(start);
    BOOST_TEST(code == 70, "output: " << p.output());
    // TERM 300 ms before the validity (790 ms) ends, KILL when it ends.
    BOOST_TEST((took >= 700 && took < 3000), "took " << took << " ms");
    BOOST_TEST(p.output().find("sending SIGKILL") != std::string::npos, "output: " << p.output());
}

BOOST_AUTO_TEST_CASE(the_kill_signal_is_configurable)
{
    cluster nodes(1);
    cli_process p({"exec", "--nodes", comma_joined(nodes.urls()), "--key", "usr1", "--ttl", "500ms", "--no-watchdog",
                   "--kill-signal", "USR1", "--", "sh", "-c", "trap 'echo got-usr1; exit 0' USR1; sleep 30 & wait"});
    const int code = p.wait(10s);
    BOOST_TEST(code == 70);  // the command exited 0, but its lease ended before it did
    BOOST_TEST(p.output().find("got-usr1") != std::string::npos, "output: " << p.output());
}

BOOST_AUTO_TEST_CASE(a_paused_minority_does_not_disturb_a_running_command)
{
    cluster nodes(5);
    cli_process p({"exec", "--nodes", comma_joined(nodes.urls()), "--key", "steady", "--ttl", "900ms", "--", "sh", "-c",
                   "sleep 2; exit 5"});
    BOOST_REQUIRE(wait_until([&] { return nodes_with_key(nodes, "steady") == 5u; }, 10s));
    nodes[3].pause();
    nodes[4].kill();
    const int code = p.wait(10s);
    nodes[3].resume();
    BOOST_TEST(code == 5, "output: " << p.output());  // the watchdog kept it on the 3 nodes left
}

BOOST_AUTO_TEST_SUITE_END()
