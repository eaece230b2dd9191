// The `redlock` executable as a process: every exit code, the child's environment, release after the child,
// signal forwarding, status and bench output.
#include <boost/json/src.hpp>  // header-only Boost.JSON, to parse `bench --json`
#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <common/models/fair_queue.hpp>
#include <common/processes/subprocess.hpp>
#include <common/run_coro.hpp>
#include <common/servers/redis_node.hpp>
#include <csignal>
#include <cstdlib>
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

constexpr auto cli_limit = std::chrono::milliseconds(20'000);

long long elapsed_ms(steady_clock::time_point since)
{
    return std::chrono::duration_cast<std::chrono::milliseconds>(steady_clock::now() - since).count();
}

command_result redlock_cli(std::vector<std::string> args, std::chrono::milliseconds limit = cli_limit)
{
    args.insert(args.begin(), REDLOCK_CLI_PATH);
    return run_command(args, limit);
}

std::string redis_cli_path()
{
    return cli_program();
}

std::size_t nodes_with_key(const cluster& nodes, const std::string& key)
{
    std::size_t n = 0;
    for (std::size_t i = 0; i < nodes.size(); ++i)
        if (nodes[i].running() && nodes[i].cli({"EXISTS", key}) == "1") ++n;
    return n;
}

// Ports where nothing listens: connections are refused at once.
std::string unreachable_nodes(std::size_t n)
{
    std::vector<std::string> urls;
    for (auto port : pick_free_ports(n)) urls.push_back("redis://127.0.0.1:" + std::to_string(port));
    return comma_joined(urls);
}

std::string helper_path(const std::string& name)
{
    return std::string(REDLOCK_TEST_HELPER_DIR) + "/helper_" + name;
}

std::size_t count_lines_starting_with(const std::string& text, const std::string& prefix)
{
    std::size_t n = 0;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);)
        if (line.starts_with(prefix)) ++n;
    return n;
}

bool is_hex_token(const std::string& s)
{
    return s.size() == 32 && s.find_first_not_of("0123456789abcdef") == std::string::npos;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(cli)

BOOST_AUTO_TEST_CASE(exits_with_the_commands_own_code)
{
    cluster nodes(3);
    const auto urls = comma_joined(nodes.urls());
    BOOST_TEST(redlock_cli({"exec", "--nodes", urls, "--key", "code", "--", "true"}).exit_code == 0);
    BOOST_TEST(redlock_cli({"exec", "--nodes", urls, "--key", "code", "--", "sh", "-c", "exit 3"}).exit_code == 3);
    BOOST_TEST(redlock_cli({"exec", "--nodes", urls, "--key", "code", "--", "false"}).exit_code == 1);
    // Killed by a signal: 128 + its number, as a shell reports it.
    BOOST_TEST(redlock_cli({"exec", "--nodes", urls, "--key", "code", "--", "sh", "-c", "kill -KILL $$"}).exit_code ==
               128 + SIGKILL);
    BOOST_TEST(nodes_with_key(nodes, "code") == 0u);
}

BOOST_AUTO_TEST_CASE(the_child_sees_the_key_and_the_token_it_holds)
{
    cluster nodes(3);
    const std::string get = redis_cli_path() + " -p " + std::to_string(nodes[1].port()) + " GET \"$REDLOCK_KEY\"";
    auto r = redlock_cli({"exec", "--nodes", comma_joined(nodes.urls()), "--key", "env:job", "--", "sh", "-c",
                          "echo $REDLOCK_KEY $REDLOCK_TOKEN; " + get});
    BOOST_TEST_INFO("stderr: " << r.err);
    BOOST_REQUIRE(r.exit_code == 0);
    std::istringstream out(r.out);
    std::string key, token, stored;
    out >> key >> token >> stored;
    BOOST_TEST(key == "env:job");
    BOOST_TEST(is_hex_token(token));
    BOOST_TEST(stored == token);  // the token is the value in the nodes while the child runs
    BOOST_TEST(nodes_with_key(nodes, "env:job") == 0u);
}

BOOST_AUTO_TEST_CASE(an_outer_locks_variables_do_not_leak_into_the_child)
{
    cluster nodes(1);
    ::setenv("REDLOCK_FENCING_TOKEN", "999", 1);
    ::setenv("REDLOCK_TOKEN", "outer", 1);
    auto r = redlock_cli({"exec", "--nodes", comma_joined(nodes.urls()), "--key", "inner", "--", "sh", "-c",
                          "echo ${REDLOCK_FENCING_TOKEN:-none} $REDLOCK_TOKEN"});
    ::unsetenv("REDLOCK_FENCING_TOKEN");
    ::unsetenv("REDLOCK_TOKEN");
    BOOST_REQUIRE(r.exit_code == 0);
    std::istringstream out(r.out);
    std::string fencing, token;
    out >> fencing >> token;
    BOOST_TEST(fencing == "none");
    BOOST_TEST(is_hex_token(token));
}

BOOST_AUTO_TEST_CASE(fencing_exports_an_increasing_token_and_status_shows_the_counter)
{
    cluster nodes(3);
    const auto urls = comma_joined(nodes.urls());
    std::uint64_t previous = 0;
    for (int i = 0; i < 3; ++i) {
        auto r = redlock_cli({"exec", "--nodes", urls, "--key", "fenced:job", "--fencing", "--", "sh", "-c",
                              "echo $REDLOCK_FENCING_TOKEN"});
        BOOST_TEST_INFO("stderr: " << r.err);
        BOOST_REQUIRE(r.exit_code == 0);
        const auto token = std::stoull(r.out);
        BOOST_TEST(token > previous);
        previous = token;
    }
    auto r = redlock_cli({"status", "--nodes", urls, "--key", "fenced:job"});
    BOOST_TEST(r.exit_code == 0, "stderr: " << r.err);
    BOOST_TEST(r.out.find("fence " + std::to_string(previous)) != std::string::npos, "stdout: " << r.out);
    BOOST_TEST(r.out.find("fencing counter: " + std::to_string(previous) + " ({fenced:job}:fence") != std::string::npos,
               "stdout: " << r.out);
}

BOOST_AUTO_TEST_CASE(the_lease_is_released_when_the_child_exits_whatever_its_code)
{
    cluster nodes(3);
    for (const char* code : {"0", "7"}) {
        auto r = redlock_cli({"exec", "--nodes", comma_joined(nodes.urls()), "--key", "released", "--ttl", "30s", "--",
                              "sh", "-c", std::string("exit ") + code});
        BOOST_TEST(r.exit_code == std::atoi(code));
        BOOST_TEST(nodes_with_key(nodes, "released") == 0u);  // not left to expire after 30 s
    }
    // And the next holder gets it at once.
    const auto start = steady_clock::now();
    BOOST_TEST(
        redlock_cli({"exec", "--nodes", comma_joined(nodes.urls()), "--key", "released", "--wait", "0", "--", "true"})
            .exit_code == 0);
    BOOST_TEST(elapsed_ms(start) < 2000);
}

BOOST_AUTO_TEST_CASE(nodes_come_from_the_environment_when_not_given)
{
    cluster nodes(3);
    ::setenv("REDLOCK_NODES", comma_joined(nodes.urls()).c_str(), 1);
    const std::string get = redis_cli_path() + " -p " + std::to_string(nodes[2].port()) + " GET \"$REDLOCK_KEY\"";
    auto r = redlock_cli({"exec", "--key", "from-env", "--", "sh", "-c", get});
    ::unsetenv("REDLOCK_NODES");
    BOOST_TEST_INFO("stderr: " << r.err);
    BOOST_TEST(r.exit_code == 0);
    BOOST_TEST(is_hex_token(r.out.substr(0, r.out.find('\n'))));
}

BOOST_AUTO_TEST_CASE(usage_errors_exit_64_with_a_message_before_any_io)
{
    // Nothing listens there: a usage error must be found before trying.
    const auto nowhere = unreachable_nodes(3);
    struct usage_case {
        std::vector<std::string> args;
        std::string says;
    };
    const std::vector<usage_case> cases = {
        {{}, "no command"},
        {{"frob"}, "unknown command 'frob'"},
        {{"exec", "--nodes", nowhere, "--bogus", "--key", "k", "--", "true"}, "--bogus"},
        {{"exec", "--nodes", nowhere, "--key", "", "--", "true"}, "--key must not be empty"},
        {{"exec", "--nodes", nowhere, "--", "true"}, "--key NAME is required"},
        {{"exec", "--nodes", nowhere, "--key", "k", "--ttl", "0", "--", "true"}, "--ttl must be positive"},
        {{"exec", "--nodes", nowhere, "--key", "k", "--ttl", "0ms", "--", "true"}, "--ttl must be positive"},
        {{"exec", "--nodes", nowhere, "--key", "k", "--ttl=-5s", "--", "true"}, "not a duration"},
        {{"exec", "--nodes", nowhere, "--key", "k", "--ttl", "ten", "--", "true"}, "not a duration"},
        {{"exec", "--nodes", nowhere, "--key", "k", "--wait", "5x", "--", "true"}, "not a duration"},
        {{"exec", "--nodes", "http://127.0.0.1:1", "--key", "k", "--", "true"}, "bad node URL"},
        {{"exec", "--nodes", "redis://127.0.0.1:99999", "--key", "k", "--", "true"}, "bad node URL"},
        {{"exec", "--nodes", "redis://127.0.0.1:7,redis://127.0.0.1:7", "--key", "k", "--", "true"}, "listed twice"},
        {{"exec", "--nodes", nowhere, "--key", "k"}, "no command"},
        {{"exec", "--nodes", nowhere, "--key", "k", "--"}, "no command"},
        {{"exec", "--nodes", nowhere, "--key", "k", "sleep", "1"}, "put the command after '--'"},
        {{"exec", "--nodes", nowhere, "--key", "k", "--limit", "0", "--", "true"}, "--limit"},
        {{"exec", "--nodes", nowhere, "--key", "k", "--limit", "3", "--waiter-ttl", "1s", "--", "true"},
         "--waiter-ttl goes with --fair for a semaphore"},
        {{"exec", "--nodes", nowhere, "--key", "k", "--shared", "--waiter-ttl", "1s", "--", "true"},
         "not with --shared"},
        {{"exec", "--nodes", nowhere, "--key", "k", "--shared", "--limit", "2", "--", "true"}, "no sides"},
        {{"exec", "--nodes", nowhere, "--key", "k", "--shared", "--fair", "--", "true"},
         "--shared does not go with --fair"},
        {{"exec", "--nodes", nowhere, "--key", "k", "--shared", "--fencing", "--", "true"},
         "--fencing goes with the write side"},
        {{"exec", "--nodes", nowhere, "--key", "k", "--fair", "--waiter-ttl", "1x", "--", "true"}, "not a duration"},
        {{"exec", "--nodes", nowhere, "--key", "k", "--kill-signal", "NOPE", "--", "true"}, "not a signal"},
        {{"exec", "--nodes", nowhere, "--key", "k", "-v", "-q", "--", "true"}, "-v and -q"},
        {{"status", "--nodes", nowhere}, "--key NAME is required"},
        {{"status", "--nodes", nowhere, "--key", "k", "extra"}, "unexpected argument 'extra'"},
        {{"bench", "--nodes", nowhere, "--scenario", "fast"}, "not a scenario"},
        {{"bench", "--nodes", nowhere, "--clients", "0"}, "--clients"},
        {{"bench", "--nodes", nowhere, "--duration", "0"}, "--duration must be positive"},
        // Durations that would overflow a deadline are refused by the parser.
        {{"exec", "--nodes", nowhere, "--key", "k", "--ttl", "99999999999999999h", "--", "true"}, "--ttl"},
        {{"exec", "--nodes", nowhere, "--key", "k", "--wait", "99999999999999999h", "--", "true"}, "--wait"},
        {{"exec", "--nodes", nowhere, "--key", "k", "--wait", "99999999h", "--", "true"},
         "--wait: '99999999h' is too long"},
        {{"exec", "--nodes", nowhere, "--key", "k", "--kill-grace", "99999999h", "--", "true"}, "--kill-grace"},
        {{"bench", "--nodes", nowhere, "--duration", "99999999h"}, "--duration"},
    };
    for (const auto& c : cases) {
        std::string line;
        for (const auto& a : c.args) line += "'" + a + "' ";
        BOOST_TEST_CONTEXT("redlock " << line)
        {
            const auto start = steady_clock::now();
            auto r = redlock_cli(c.args);
            BOOST_TEST(r.exit_code == 64);
            BOOST_TEST(r.err.find(c.says) != std::string::npos, "stderr: " << r.err);
            BOOST_TEST(r.out.empty());
            BOOST_TEST(elapsed_ms(start) < 1000);
        }
    }
}

// The library's own bounds (lock_options::max_ttl; a ttl the watchdog cannot keep up with) are usage errors
// too, with the library's explanation, and the command does not run.
BOOST_AUTO_TEST_CASE(a_ttl_the_library_refuses_exits_64_without_running_the_command)
{
    cluster nodes(1);
    const auto urls = comma_joined(nodes.urls());
    struct bound_case {
        std::vector<std::string> flags;
        std::string says;
    };
    const std::vector<bound_case> cases = {
        {{"--ttl", "3000000h"}, "too long"},  // past any DURATION: the parser's own limit comes first
        {{"--ttl", "721h"}, "at most 30 days"},
        {{"--ttl", "721h", "--wait", "0"}, "at most 30 days"},
        {{"--ttl", "3ms"}, "--ttl must be at least"},  // the CLI's own floor comes first
    };
    for (const auto& c : cases) {
        std::vector<std::string> args = {"exec", "--nodes", urls, "--key", "bounds"};
        args.insert(args.end(), c.flags.begin(), c.flags.end());
        args.insert(args.end(), {"--", "sh", "-c", "echo ran"});
        BOOST_TEST_CONTEXT("redlock exec " << c.flags.front() << " " << c.flags.at(1))
        {
            auto r = redlock_cli(args);
            BOOST_TEST(r.exit_code == 64, "stderr: " << r.err);
            BOOST_TEST(r.err.find(c.says) != std::string::npos, "stderr: " << r.err);
            BOOST_TEST(r.out.find("ran") == std::string::npos);
        }
    }
    BOOST_TEST(nodes[0].cli({"EXISTS", "bounds"}) == "0");
    auto bench = redlock_cli({"bench", "--nodes", urls, "--ttl", "721h", "--duration", "300ms"});
    BOOST_TEST(bench.exit_code == 64, "stderr: " << bench.err);
    BOOST_TEST(bench.err.find("at most 30 days") != std::string::npos, "stderr: " << bench.err);
    BOOST_TEST(bench.out.empty());
    // The longest ttl allowed still works.
    auto r = redlock_cli({"exec", "--nodes", urls, "--key", "bounds", "--ttl", "720h", "--", "sh", "-c", "echo ran"});
    BOOST_TEST(r.exit_code == 0, "stderr: " << r.err);
    BOOST_TEST(r.out == "ran\n");
    BOOST_TEST(nodes[0].cli({"EXISTS", "bounds"}) == "0");
}

BOOST_AUTO_TEST_CASE(help_exits_0)
{
    for (const auto& args : std::vector<std::vector<std::string>>{
             {"help"}, {"--help"}, {"exec", "--help"}, {"status", "-h"}, {"bench", "--help"}}) {
        auto r = redlock_cli(args);
        BOOST_TEST(r.exit_code == 0);
        BOOST_TEST(r.out.find("usage: redlock") != std::string::npos);
    }
    // `redlock help <command>` is that command's --help.
    for (const char* command : {"exec", "throttle", "status", "bench"}) {
        auto r = redlock_cli({"help", command});
        BOOST_TEST(r.exit_code == 0, command);
        BOOST_TEST(r.out == redlock_cli({command, "--help"}).out, command);
        BOOST_TEST(r.out.starts_with(std::string("usage: redlock ") + command), command);
    }
    BOOST_TEST(redlock_cli({"help", "frob"}).exit_code == 64);
}

BOOST_AUTO_TEST_CASE(version_prints_the_project_version)
{
    for (const char* flag : {"--version", "version"}) {
        auto r = redlock_cli({flag});
        BOOST_TEST(r.exit_code == 0, flag);
        BOOST_TEST(r.out == "redlock " REDLOCK_VERSION "\n", flag);
    }
    BOOST_TEST(redlock_cli({"--version", "extra"}).exit_code == 64);
}

BOOST_AUTO_TEST_CASE(a_missing_command_exits_127_without_taking_the_lock)
{
    cluster nodes(1);
    auto r = redlock_cli({"exec", "--nodes", comma_joined(nodes.urls()), "--key", "typo", "--", "no-such-command-xyz"});
    BOOST_TEST(r.exit_code == 127);
    BOOST_TEST(r.err.find("no-such-command-xyz") != std::string::npos);
    BOOST_TEST(nodes[0].cli({"EXISTS", "typo"}) == "0");
}

BOOST_AUTO_TEST_CASE(unreachable_nodes_exit_69_when_the_wait_runs_out)
{
    const auto start = steady_clock::now();
    auto r = redlock_cli({"exec", "--nodes", unreachable_nodes(3), "--key", "k", "--wait", "500ms", "--", "true"});
    const auto took = elapsed_ms(start);
    BOOST_TEST(r.exit_code == 69);
    BOOST_TEST((took >= 450 && took < 1500), "took " << took << " ms");
    BOOST_TEST(r.err.find("no quorum") != std::string::npos, "stderr: " << r.err);
    BOOST_TEST(r.err.find("refused") != std::string::npos, "stderr: " << r.err);  // says why, per node
    BOOST_TEST(r.out.empty());
}

namespace {

// Until `n` waiters are queued for the fair lock `key` on a quorum of the nodes: the order binds them, so a waiter
// that asks after that is served after them.
bool until_placed(const cluster& nodes, const std::string& key, std::size_t n)
{
    return wait_until([&] { return queued_on_quorum(nodes, key).size() == n; }, 5000ms);
}

// `redlock exec --fair` in the background, running `script` under the lock.
pid_t spawn_fair_exec(const cluster& nodes, const std::string& key, const std::string& script, const std::string& log,
                      std::vector<std::string> extra = {})
{
    std::vector<std::string> args{REDLOCK_CLI_PATH, "exec",   "--nodes", comma_joined(nodes.urls()), "--key", key,
                                  "--fair",         "--wait", "60s"};
    args.insert(args.end(), extra.begin(), extra.end());
    for (const auto& a : {"--", "sh", "-c"}) args.emplace_back(a);
    args.push_back(script);
    return spawn_process({args, environment_with({}), log});
}

// A file whose creation lets a holder's command end. The command polls for it at most 30 s (1,500 times 20 ms): a
// shell left behind by a failed check (it runs in its own process group, which the parent's death does not
// reach) still ends. The gate opens on destruction too, so a failed REQUIRE lets the holder go at once.
class gate {
public:
    explicit gate(std::string path) : path_(std::move(path)) {}
    ~gate() { open(); }
    gate(const gate&) = delete;
    gate& operator=(const gate&) = delete;

    // The holder's script: wait until the gate opens.
    std::string script() const
    {
        return "i=0; while [ ! -e " + path_ + " ] && [ $i -lt 1500 ]; do sleep 0.02; i=$((i+1)); done";
    }
    void open()
    {
        if (opened_) return;
        opened_ = true;
        std::ofstream(path_).put('\n');
    }

private:
    std::string path_;
    bool opened_ = false;
};

std::vector<int> numbers_in(const std::string& path)
{
    std::vector<int> out;
    std::ifstream in(path);
    for (int n; in >> n;) out.push_back(n);
    return out;
}

}  // namespace

// Processes that queue one after another for a fair lock run their commands in that order, on 1 and 3 nodes.
BOOST_AUTO_TEST_CASE(fair_exec_serves_processes_in_the_order_they_arrived)
{
    for (std::size_t n : {1u, 3u}) {
        cluster nodes(n);
        const auto dir = make_temp_dir("redlock-fair-");
        const std::string key = "fifo";
        gate go(dir + "/go");
        const auto order = dir + "/order";
        const auto log = dir + "/log";
        auto holder = spawn_fair_exec(nodes, key, go.script(), log);
        BOOST_REQUIRE(wait_until([&] { return nodes[0].cli({"EXISTS", key}) == "1"; }, 5000ms));
        constexpr int waiters = 60;
        std::vector<pid_t> pids;
        for (int i = 0; i < waiters; ++i) {
            pids.push_back(spawn_fair_exec(nodes, key, "echo " + std::to_string(i) + " >> " + order, log));
            BOOST_REQUIRE_MESSAGE(until_placed(nodes, key, static_cast<std::size_t>(i + 1)),
                                  "process " << i << " did not join the queue");
        }
        go.open();
        int status = 0;
        BOOST_TEST(wait_for_exit(holder, 10'000ms, &status));
        for (auto pid : pids) {
            BOOST_REQUIRE(wait_for_exit(pid, 30'000ms, &status));
            BOOST_TEST(exit_status(status) == 0);
        }
        std::vector<int> expected(waiters);
        for (int i = 0; i < waiters; ++i) expected[static_cast<std::size_t>(i)] = i;
        BOOST_TEST(numbers_in(order) == expected, boost::test_tools::per_element());
        std::filesystem::remove_all(dir);
    }
}

// A waiter killed with SIGKILL at the head of the queue stops blocking the next within its waiter TTL, on 1 and 3
// nodes.
BOOST_AUTO_TEST_CASE(a_fair_waiter_killed_at_the_head_stops_blocking_within_its_waiter_ttl)
{
    for (std::size_t n : {1u, 3u}) {
        BOOST_TEST_CONTEXT(n << " nodes")
        {
            cluster nodes(n);
            const auto dir = make_temp_dir("redlock-fair-");
            const std::string key = "fifo";
            gate go(dir + "/go");
            const auto log = dir + "/log";
            auto holder = spawn_fair_exec(nodes, key, go.script(), log);
            BOOST_REQUIRE(wait_until([&] { return nodes[0].cli({"EXISTS", key}) == "1"; }, 5000ms));
            auto doomed = spawn_fair_exec(nodes, key, "true", log, {"--waiter-ttl", "1s"});
            BOOST_REQUIRE(until_placed(nodes, key, 1));  // so the next one's ticket is higher
            auto next = spawn_fair_exec(nodes, key, "true", log, {"--waiter-ttl", "1s"});
            BOOST_REQUIRE(until_placed(nodes, key, 2));
            ::kill(doomed, SIGKILL);
            const auto killed = steady_clock::now();
            int status = 0;
            BOOST_REQUIRE(wait_for_exit(doomed, 5000ms, &status));
            go.open();
            BOOST_REQUIRE(wait_for_exit(holder, 10'000ms, &status));
            BOOST_REQUIRE(wait_for_exit(next, 10'000ms, &status));
            BOOST_TEST(exit_status(status) == 0);
            const auto took = elapsed_ms(killed);
            BOOST_TEST_MESSAGE("the next waiter ran " << took << " ms after the head was killed");
            BOOST_TEST(took < 1000 + 1000 / 3 + 1000, took << " ms");  // one waiter TTL, a heartbeat, and slack
            for (std::size_t i = 0; i < n; ++i)  // the next one's leaving reaches the last node a moment later
                BOOST_TEST(wait_until([&] { return fair_queue_length(nodes[i], key) == 0; }, 2000ms), "node " << i);
            std::filesystem::remove_all(dir);
        }
    }
}

BOOST_AUTO_TEST_CASE(a_lock_held_by_another_owner_exits_75_when_the_wait_runs_out)
{
    cluster nodes(3);
    for (std::size_t i = 0; i < nodes.size(); ++i) nodes[i].cli({"SET", "busy", "someone-else", "PX", "20000"});
    auto start = steady_clock::now();
    auto r =
        redlock_cli({"exec", "--nodes", comma_joined(nodes.urls()), "--key", "busy", "--wait", "300ms", "--", "true"});
    auto took = elapsed_ms(start);
    BOOST_TEST(r.exit_code == 75);
    BOOST_TEST((took >= 280 && took < 2000), "took " << took << " ms");
    BOOST_TEST(r.err.find("held by another owner") != std::string::npos, "stderr: " << r.err);

    start = steady_clock::now();
    r = redlock_cli(
        {"exec", "--nodes", comma_joined(nodes.urls()), "--key", "busy", "--wait", "0", "-q", "--", "true"});
    BOOST_TEST(r.exit_code == 75);
    BOOST_TEST(elapsed_ms(start) < 1500);
    BOOST_TEST(!r.err.empty());  // -q still prints errors
    for (std::size_t i = 0; i < nodes.size(); ++i) BOOST_TEST(nodes[i].cli({"GET", "busy"}) == "someone-else");
}

BOOST_AUTO_TEST_CASE(the_lock_is_taken_once_the_holder_lets_go_within_the_wait)
{
    cluster nodes(3);
    for (std::size_t i = 0; i < nodes.size(); ++i) nodes[i].cli({"SET", "soon", "someone-else", "PX", "700"});
    const auto start = steady_clock::now();
    auto r =
        redlock_cli({"exec", "--nodes", comma_joined(nodes.urls()), "--key", "soon", "--wait", "5s", "--", "true"});
    BOOST_TEST(r.exit_code == 0, "stderr: " << r.err);
    BOOST_TEST(elapsed_ms(start) >= 600);
}

BOOST_AUTO_TEST_CASE(quiet_and_verbose)
{
    cluster nodes(3);
    auto r = redlock_cli({"exec", "--nodes", comma_joined(nodes.urls()), "--key", "talk", "-q", "--", "true"});
    BOOST_TEST(r.exit_code == 0);
    BOOST_TEST(r.err.empty(), "stderr: " << r.err);
    r = redlock_cli({"exec", "--nodes", comma_joined(nodes.urls()), "--key", "talk", "--", "true"});
    BOOST_TEST(r.err.empty(), "stderr: " << r.err);
    r = redlock_cli({"exec", "--nodes", comma_joined(nodes.urls()), "--key", "talk", "-v", "--", "true"});
    BOOST_TEST(r.exit_code == 0);
    BOOST_TEST(r.err.find("granted") != std::string::npos, "stderr: " << r.err);
    BOOST_TEST(r.err.find("acquired 'talk' in") != std::string::npos, "stderr: " << r.err);
    BOOST_TEST(r.err.find("released 'talk' in") != std::string::npos, "stderr: " << r.err);
}

BOOST_AUTO_TEST_CASE(term_sent_to_redlock_reaches_the_child)
{
    cluster nodes(3);
    const auto dir = make_temp_dir("redlock-cli-");
    const auto out = dir + "/out";
    const pid_t pid =
        spawn_process({.args = {REDLOCK_CLI_PATH, "exec", "--nodes", comma_joined(nodes.urls()), "--key", "sig", "--",
                                "sh", "-c", "trap 'exit 42' TERM; echo ready; sleep 30 & wait"},
                       .env = environment_with({}),
                       .output_file = out});
    BOOST_REQUIRE(wait_until([&] { return file_contents(out).find("ready") != std::string::npos; }, 10s));
    BOOST_TEST(nodes_with_key(nodes, "sig") == 3u);
    ::kill(pid, SIGTERM);
    int status = 0;
    const bool exited = wait_for_exit(pid, 5s, &status);
    if (!exited) stop_process(pid, 1s);
    BOOST_REQUIRE(exited);
    BOOST_TEST(exit_status(status) == 42, "output: " << file_contents(out));
    BOOST_TEST(nodes_with_key(nodes, "sig") == 0u);
    std::filesystem::remove_all(dir);
}

BOOST_AUTO_TEST_CASE(int_and_hup_are_forwarded_too)
{
    cluster nodes(1);
    const auto dir = make_temp_dir("redlock-cli-");
    for (int signo : {SIGINT, SIGHUP}) {
        const auto out = dir + "/out" + std::to_string(signo);
        const pid_t pid = spawn_process(
            {.args = {REDLOCK_CLI_PATH, "exec", "--nodes", comma_joined(nodes.urls()), "--key", "sig2", "--", "sh",
                      "-c", "trap 'exit 10' INT; trap 'exit 11' HUP; echo ready; sleep 30 & wait"},
             .env = environment_with({}),
             .output_file = out});
        BOOST_REQUIRE(wait_until([&] { return file_contents(out).find("ready") != std::string::npos; }, 10s));
        ::kill(pid, signo);
        int status = 0;
        const bool exited = wait_for_exit(pid, 5s, &status);
        if (!exited) stop_process(pid, 1s);
        BOOST_REQUIRE(exited);
        BOOST_TEST(exit_status(status) == (signo == SIGINT ? 10 : 11));
    }
    std::filesystem::remove_all(dir);
}

// In the foreground of a terminal the command shares redlock's process group: Ctrl-C reaches it from the
// terminal, and redlock must not send it a second one. A SIGINT sent to redlock alone is still forwarded.
BOOST_AUTO_TEST_CASE(in_a_terminal_the_command_gets_each_sigint_once)
{
    cluster nodes(1);
    const auto dir = make_temp_dir("redlock-cli-");
    for (const std::string how : {"ctrl-c", "kill-int"}) {
        BOOST_TEST_CONTEXT("helper_pty_run " << how)
        {
            const auto log = dir + "/" + how;
            auto r = run_command(
                {helper_path("pty_run"), how, REDLOCK_CLI_PATH, "exec", "-v", "--nodes", comma_joined(nodes.urls()),
                 "--key", "tty", "--", helper_path("signal_logger"), log, "700"},
                cli_limit);
            BOOST_TEST(r.exit_code == 0, "terminal: " << r.out << r.err);
            // The scenario: the command runs in redlock's process group (the terminal's foreground).
            BOOST_TEST(r.out.find("in redlock's process group") != std::string::npos, "terminal: " << r.out);
            const auto got = file_contents(log);
            // Two SIGINTs pending at once count as one (the command may not run in between): redlock's account
            // of what it forwarded is the deterministic check.
            BOOST_TEST(count_lines_starting_with(got, "SIGINT ") == 1u, "the command got: " << got);
            const bool forwarded = r.out.find("forwarding SIGINT") != std::string::npos;
            BOOST_TEST(forwarded == (how == "kill-int"), "terminal: " << r.out);
            BOOST_TEST(nodes[0].cli({"EXISTS", "tty"}) == "0");
        }
    }
    std::filesystem::remove_all(dir);
}

// The lease is released on every way out once it was taken: here the command passes the $PATH check but its
// execve fails (a missing interpreter).
BOOST_AUTO_TEST_CASE(a_command_that_fails_to_start_after_the_lock_was_taken_releases_it)
{
    cluster nodes(3);
    const auto dir = make_temp_dir("redlock-cli-");
    const auto script = dir + "/broken";
    std::ofstream(script) << "#!/no/such/interpreter\n";
    std::filesystem::permissions(script, std::filesystem::perms::owner_all);
    auto r =
        redlock_cli({"exec", "--nodes", comma_joined(nodes.urls()), "--key", "nostart", "--ttl", "30s", "--", script});
    BOOST_TEST(r.exit_code == 127, "stderr: " << r.err);
    BOOST_TEST(nodes_with_key(nodes, "nostart") == 0u);  // released, not left for 30 s
    std::filesystem::remove_all(dir);
}

BOOST_AUTO_TEST_CASE(a_signal_while_waiting_ends_the_wait_without_running_the_command)
{
    cluster nodes(1);
    nodes[0].cli({"SET", "waiting", "someone-else", "PX", "30000"});
    const auto dir = make_temp_dir("redlock-cli-");
    const auto out = dir + "/out";
    const pid_t pid = spawn_process({.args = {REDLOCK_CLI_PATH, "exec", "--nodes", comma_joined(nodes.urls()), "--key",
                                              "waiting", "--", "sh", "-c", "echo ran"},
                                     .env = environment_with({}),
                                     .output_file = out});
    std::this_thread::sleep_for(500ms);  // waiting forever (the default) by now
    ::kill(pid, SIGTERM);
    int status = 0;
    const bool exited = wait_for_exit(pid, 3s, &status);
    if (!exited) stop_process(pid, 1s);
    BOOST_REQUIRE(exited);
    BOOST_TEST(exit_status(status) == 128 + SIGTERM);
    const auto text = file_contents(out);
    BOOST_TEST(text.find("ran") == std::string::npos);
    BOOST_TEST(text.find("interrupted by SIGTERM") != std::string::npos, "output: " << text);
    std::filesystem::remove_all(dir);
}

BOOST_AUTO_TEST_CASE(status_shows_holder_ttl_and_reachability)
{
    cluster nodes(3);
    for (std::size_t i = 0; i < nodes.size(); ++i) nodes[i].cli({"SET", "job", "tok-1", "PX", "20000"});
    auto r = redlock_cli({"status", "--nodes", comma_joined(nodes.urls()), "--key", "job"});
    BOOST_TEST(r.exit_code == 0, "stderr: " << r.err);
    // Each node's line names its server as HELLO did ("reachable  server valkey 8.0.1  holder ...").
    const auto server = redlock::to_string(server_of_info(nodes[0].cli({"INFO", "server"})));
    BOOST_TEST(r.out.find(nodes.urls()[0] + "  reachable  server " + server + "  holder tok-1") != std::string::npos,
               "stdout: " << r.out);
    BOOST_TEST(r.out.find("holder tok-1") != std::string::npos, "stdout: " << r.out);
    BOOST_TEST(r.out.find("ttl ") != std::string::npos);
    BOOST_TEST(r.out.find("held by tok-1 on 3 of 3 nodes") != std::string::npos, "stdout: " << r.out);
    BOOST_TEST(r.out.find("fencing counter: not set ({job}:fence)") != std::string::npos, "stdout: " << r.out);

    r = redlock_cli({"status", "--nodes", comma_joined(nodes.urls()), "--key", "free-one"});
    BOOST_TEST(r.exit_code == 0);
    BOOST_TEST(r.out.find("free on every reachable node") != std::string::npos, "stdout: " << r.out);

    nodes[0].kill();  // a quorum is left: 0, with a note
    r = redlock_cli({"status", "--nodes", comma_joined(nodes.urls()), "--key", "job"});
    BOOST_TEST(r.exit_code == 0);
    BOOST_TEST(r.out.find("unreachable") != std::string::npos, "stdout: " << r.out);
    BOOST_TEST(r.err.find("1 of 3 nodes unreachable") != std::string::npos, "stderr: " << r.err);

    nodes[1].kill();  // no quorum: 69
    r = redlock_cli({"status", "--nodes", comma_joined(nodes.urls()), "--key", "job"});
    BOOST_TEST(r.exit_code == 69);
    BOOST_TEST(r.err.find("only 1 of 3 nodes reachable") != std::string::npos, "stderr: " << r.err);
}

BOOST_AUTO_TEST_CASE(status_sees_a_lock_held_by_exec)
{
    cluster nodes(3);
    const auto dir = make_temp_dir("redlock-cli-");
    const auto out = dir + "/out";
    const pid_t pid = spawn_process({.args = {REDLOCK_CLI_PATH, "exec", "--nodes", comma_joined(nodes.urls()), "--key",
                                              "live", "--", "sh", "-c", "echo token=$REDLOCK_TOKEN; sleep 30"},
                                     .env = environment_with({}),
                                     .output_file = out});
    BOOST_REQUIRE(wait_until([&] { return file_contents(out).find("token=") != std::string::npos; }, 10s));
    const auto text = file_contents(out);
    const auto token = text.substr(text.find("token=") + 6, 32);
    auto r = redlock_cli({"status", "--nodes", comma_joined(nodes.urls()), "--key", "live"});
    BOOST_TEST(r.exit_code == 0);
    BOOST_TEST(r.out.find("held by " + token + " on 3 of 3 nodes") != std::string::npos, "stdout: " << r.out);
    stop_process(pid, 5s);
    std::filesystem::remove_all(dir);
}

BOOST_AUTO_TEST_CASE(bench_json_has_the_documented_keys)
{
    cluster nodes(3);
    for (const char* scenario : {"uncontended", "contended"}) {
        BOOST_TEST_CONTEXT(scenario)
        {
            auto r = redlock_cli({"bench", "--nodes", comma_joined(nodes.urls()), "--scenario", scenario, "--clients",
                                  "3", "--workers", "2", "--duration", "700ms", "--json"});
            BOOST_TEST(r.exit_code == 0, "stderr: " << r.err);
            boost::json::error_code ec;
            auto doc = boost::json::parse(r.out, ec);
            BOOST_REQUIRE_MESSAGE(!ec, "not JSON: " << r.out);
            BOOST_REQUIRE(doc.is_object());
            const auto& o = doc.as_object();
            std::vector<std::string> keys;
            for (const auto& kv : o) keys.emplace_back(kv.key());
            BOOST_TEST(
                keys == (std::vector<std::string>{"scenario", "fencing", "nodes", "clients", "workers", "ops",
                                                  "ops_per_sec", "cpu_us_per_op", "user_us_per_op", "sys_us_per_op",
                                                  "allocs_per_op", "acquire_us", "handoff_us", "errors"}),
                boost::test_tools::per_element());
            BOOST_TEST(o.at("workers").as_int64() == 2);
            BOOST_TEST(o.at("cpu_us_per_op").as_double() > 0.0);
            BOOST_TEST(o.at("user_us_per_op").as_double() >= 0.0);
            BOOST_TEST(o.at("sys_us_per_op").as_double() >= 0.0);
            // Every lock + release allocates somewhere; a sanitizer build counts nothing and says null.
            const auto& allocs = o.at("allocs_per_op");
            BOOST_TEST((allocs.is_null() || allocs.as_double() > 0.0), "allocs_per_op " << allocs);
            BOOST_TEST(o.at("scenario").as_string() == scenario);
            BOOST_TEST(o.at("fencing").as_bool() == false);
            BOOST_TEST(o.at("nodes").as_int64() == 3);
            BOOST_TEST(o.at("clients").as_int64() == 3);
            BOOST_TEST(o.at("ops").as_int64() > 0);
            BOOST_TEST(o.at("ops_per_sec").is_number());
            BOOST_TEST(o.at("errors").as_int64() == 0);
            const auto& acquire = o.at("acquire_us").as_object();
            for (const char* k : {"p50", "p90", "p99", "max"}) BOOST_TEST(acquire.at(k).is_int64());
            BOOST_TEST(acquire.at("p50").as_int64() <= acquire.at("max").as_int64());
            const auto& handoff = o.at("handoff_us").as_object();
            BOOST_TEST(handoff.size() == 2u);
            BOOST_TEST(handoff.contains("p50"));
            BOOST_TEST(handoff.contains("p99"));
            if (std::string(scenario) == "uncontended") BOOST_TEST(handoff.at("p50").is_null());
        }
    }
}

// The hold scenario: every lease is taken, none is lost while the watchdog extends them over more than two
// TTLs, and the memory and CPU figures are there.
BOOST_AUTO_TEST_CASE(bench_hold_keeps_every_lease)
{
    cluster nodes(3);
#ifdef REDLOCK_TEST_SANITIZED  // a sanitized watchdog on a loaded machine can miss a 600 ms TTL's extensions
    const std::string ttl = "2s", hold = "4500ms";
#else
    const std::string ttl = "600ms", hold = "1500ms";
#endif
    auto r = redlock_cli({"bench", "--nodes", comma_joined(nodes.urls()), "--scenario", "hold", "--leases", "300",
                          "--ttl", ttl, "--duration", hold, "--json"});
    BOOST_TEST_REQUIRE(r.exit_code == 0, "stderr: " << r.err);
    boost::json::error_code ec;
    auto doc = boost::json::parse(r.out, ec);
    BOOST_REQUIRE_MESSAGE(!ec && doc.is_object(), "not a JSON object: " << r.out);
    const auto& o = doc.as_object();
    std::vector<std::string> keys;
    for (const auto& kv : o) keys.emplace_back(kv.key());
    BOOST_TEST(keys == (std::vector<std::string>{"scenario", "nodes", "leases", "ttl_ms", "held", "acquire_seconds",
                                                 "rss_before_mb", "rss_held_mb", "rss_peak_mb", "bytes_per_lease",
                                                 "hold_seconds", "hold_cpu_percent", "extensions", "extension_failures",
                                                 "us_per_extension", "lost", "release_seconds", "errors"}),
               boost::test_tools::per_element());
    BOOST_TEST(o.at("held").as_int64() == 300);
    BOOST_TEST(o.at("lost").as_int64() == 0);
#ifndef REDLOCK_TEST_SANITIZED  // sanitized, 256 releases at once may outlast the 50 ms per-node deadline
    BOOST_TEST(o.at("errors").as_int64() == 0);
#endif
    BOOST_TEST(o.at("rss_held_mb").as_double() > 0.0);
    BOOST_TEST(o.at("rss_peak_mb").as_double() >= o.at("rss_held_mb").as_double());
    // The watchdog extends each lease every ttl/3, some 6 times in the hold: the figure counts at least two rounds.
    BOOST_TEST(o.at("extensions").as_int64() >= 600);
    BOOST_TEST(o.at("us_per_extension").as_double() > 0.0);
#ifndef REDLOCK_TEST_SANITIZED
    for (std::size_t i = 0; i < nodes.size(); ++i)  // released: nothing of the run is left
        BOOST_TEST(nodes[i].cli({"DBSIZE"}) == "0");
#endif
}

// The handoff scenario, plain and fair, on 3 nodes: every grant went to another worker, the waits were woken
// by release messages (no timer: no polling), and the nodes' command counts are there. No timing asserted.
BOOST_DATA_TEST_CASE(bench_handoff_counts_wake_ups_and_server_calls, boost::unit_test::data::make({false, true}), fair)
{
    cluster nodes(3);
    std::vector<std::string> args{
        "bench",  "--nodes", comma_joined(nodes.urls()), "--scenario", "handoff", "--clients", "4", "--duration",
        "1500ms", "--json"};
    if (fair) args.emplace_back("--fair");
    auto r = redlock_cli(args);
    BOOST_TEST_REQUIRE(r.exit_code == 0, "stderr: " << r.err);
    boost::json::error_code ec;
    auto doc = boost::json::parse(r.out, ec);
    BOOST_REQUIRE_MESSAGE(!ec && doc.is_object(), "not a JSON object: " << r.out);
    const auto& o = doc.as_object();
    BOOST_TEST(o.at("scenario").as_string() == "handoff");
    BOOST_TEST(o.at("lock").as_string() == (fair ? "fair" : "plain"));
    const auto grants = o.at("ops").as_int64();
    BOOST_TEST(grants > 10);
    BOOST_TEST(o.at("handoffs").as_int64() >= grants - 1);  // each grant after the first is a handoff
    BOOST_TEST(o.at("woken_by_release").as_int64() > 0);
    BOOST_TEST(o.at("attempts").as_int64() >= grants);
    const auto& calls = o.at("server_calls").as_object();
    BOOST_TEST(calls.contains("evalsha"));
    BOOST_TEST(calls.contains("spublish"));  // release messages are sharded pub/sub on Redis 7
    BOOST_TEST(!calls.contains("config|resetstat"));
    BOOST_TEST(o.at("errors").as_int64() == 0);
}

BOOST_AUTO_TEST_CASE(bench_prints_a_table_and_fails_69_without_a_quorum)
{
    cluster nodes(1);
    auto r = redlock_cli({"bench", "--nodes", comma_joined(nodes.urls()), "--duration", "300ms", "--clients", "1"});
    BOOST_TEST(r.exit_code == 0);
    BOOST_TEST(r.out.find("acquire") != std::string::npos, "stdout: " << r.out);
    BOOST_TEST(r.out.find("ops/s") != std::string::npos);
    BOOST_TEST(r.out.find("1 x 64 worker(s)") != std::string::npos, "the default is 1 client x 64 workers");
    BOOST_TEST(r.out.find("cpu/op") != std::string::npos);

    r = redlock_cli(
        {"bench", "--nodes", comma_joined(nodes.urls()), "--duration", "300ms", "--scenario", "contended", "--json"});
    BOOST_TEST(r.exit_code == 0, "stderr: " << r.err);
    BOOST_TEST(r.out.find(R"("clients":4,"workers":1)") != std::string::npos,
               "contended defaults to 4 clients x 1 worker: " << r.out);

    r = redlock_cli({"bench", "--nodes", unreachable_nodes(3), "--duration", "300ms"});
    BOOST_TEST(r.exit_code == 69);
    BOOST_TEST(r.err.find("quorum") != std::string::npos, "stderr: " << r.err);
}

BOOST_AUTO_TEST_SUITE_END()
