// `redlock elect` as a process, on 1 and 3 nodes: the command runs while leading with its term in its environment and
// its exit status becomes redlock's; a second candidate waits (or with --wait 0 exits 75); a leadership lost while the
// command runs stops it (70), or with --again campaigns again under a higher term; --listen prints the leader and
// each change, escaping the value; bad command lines exit 64.
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <chrono>
#include <common/processes/subprocess.hpp>
#include <common/run_coro.hpp>
#include <common/servers/redis_node.hpp>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
using namespace redlock::test;

namespace {

const std::string key = "leader";

std::vector<std::string> elect_args(const cluster& nodes, const std::vector<std::string>& flags)
{
    std::vector<std::string> args{REDLOCK_CLI_PATH, "elect", "--nodes", comma_joined(nodes.urls()), "--key", key};
    args.insert(args.end(), flags.begin(), flags.end());
    return args;
}

pid_t spawn_elect(const cluster& nodes, std::vector<std::string> flags, const std::string& script,
                  const std::string& log)
{
    for (const auto& a : {"--", "sh", "-c"}) flags.emplace_back(a);
    flags.push_back(script);
    return spawn_process({elect_args(nodes, flags), environment_with({}), log});
}

command_result run_elect(const cluster& nodes, std::vector<std::string> flags, const std::string& script)
{
    for (const auto& a : {"--", "sh", "-c"}) flags.emplace_back(a);
    flags.push_back(script);
    return run_command(elect_args(nodes, flags), 30'000ms);
}

// Until `path` exists (at most 30 s, so that a shell left behind by a failed check ends).
std::string until_exists(const std::string& path)
{
    return "i=0; while [ ! -e " + path + " ] && [ $i -lt 1500 ]; do sleep 0.02; i=$((i+1)); done";
}

std::vector<std::string> lines_of(const std::string& text)
{
    std::vector<std::string> out;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) out.push_back(line);
    return out;
}

}  // namespace

BOOST_AUTO_TEST_CASE(the_command_runs_while_leading_with_its_term)
{
    for (std::size_t n : {1u, 3u}) {
        BOOST_TEST_CONTEXT(n << " nodes")
        {
            cluster nodes(n);
            const auto first =
                run_elect(nodes, {"--proposal", "p"}, "echo $REDLOCK_TERM $REDLOCK_FENCING_TOKEN $REDLOCK_KEY; exit 3");
            BOOST_TEST(first.exit_code == 3, first.err);
            const auto second = run_elect(nodes, {}, "echo $REDLOCK_TERM");
            BOOST_TEST(second.exit_code == 0, second.err);
            std::istringstream a(first.out), b(second.out);
            std::uint64_t term = 0, fence = 0, next = 0;
            std::string name;
            a >> term >> fence >> name;
            b >> next;
            BOOST_TEST(term > 0u);
            BOOST_TEST(fence == term);
            BOOST_TEST(name == key);
            BOOST_TEST(next > term);
            for (std::size_t i = 0; i < n; ++i) BOOST_TEST(nodes[i].cli({"EXISTS", key}) == "0", "not resigned");
            // A `redlock exec` inside sees its own lock only: none of the leadership's variables leak through.
            const auto nested =
                run_elect(nodes, {},
                          std::string(REDLOCK_CLI_PATH) + " exec --nodes " + comma_joined(nodes.urls()) +
                              " --key inner -- sh -c 'echo ${REDLOCK_TERM:-no-term} $REDLOCK_KEY'");
            BOOST_TEST(nested.exit_code == 0, nested.err);
            BOOST_TEST(nested.out == "no-term inner\n");
        }
    }
}

BOOST_AUTO_TEST_CASE(a_second_candidate_waits_or_gives_up_with_75)
{
    cluster nodes(3);
    const auto dir = make_temp_dir("redlock-elect-");
    const auto log = dir + "/log", gate = dir + "/go", order = dir + "/order";
    const auto leader = spawn_elect(nodes, {}, "echo first >> " + order + "; " + until_exists(gate), log);
    BOOST_REQUIRE(wait_until([&] { return file_contents(order) == "first\n"; }, 10'000ms));
    const auto busy = run_elect(nodes, {"--wait", "0"}, "true");
    BOOST_TEST(busy.exit_code == 75, busy.err);
    BOOST_TEST(busy.err.find("another candidate leads") != std::string::npos, busy.err);
    const auto waiting = spawn_elect(nodes, {}, "echo second >> " + order, log);
    std::this_thread::sleep_for(300ms);
    BOOST_TEST(file_contents(order) == "first\n", "two leaders at once");
    const auto resigned = std::chrono::steady_clock::now();
    std::ofstream(gate).put('\n');
    int status = 0;
    BOOST_REQUIRE(wait_for_exit(leader, 5000ms, &status));
    BOOST_REQUIRE(wait_for_exit(waiting, 5000ms, &status));
    // Woken by the resignation's message: well within the TTL (10 s).
    BOOST_TEST((std::chrono::steady_clock::now() - resigned < 3s));
    BOOST_TEST(exit_status(status) == 0, file_contents(log));
    BOOST_TEST(file_contents(order) == "first\nsecond\n");
}

// The election key is deleted while the command runs: the watchdog's extension finds it gone, the command is stopped
// (TERM) and redlock exits 70; with --again it campaigns again and runs the command again under a higher term.
BOOST_AUTO_TEST_CASE(a_lost_leadership_stops_the_command_or_campaigns_again)
{
    cluster nodes(3);
    const auto dir = make_temp_dir("redlock-elect-");
    const auto log = dir + "/log", runs = dir + "/runs";
    const std::string script = "echo start $REDLOCK_TERM >> " + runs + "; trap 'echo stop >> " + runs +
                               "; exit 0' TERM; " + until_exists("/x");
    const auto delete_key = [&] {
        for (std::size_t i = 0; i < nodes.size(); ++i) nodes[i].cli({"DEL", key});
    };
    const auto once = spawn_elect(nodes, {"--ttl", "2s", "--kill-grace", "300ms"}, script, log);
    BOOST_REQUIRE(wait_until([&] { return lines_of(file_contents(runs)).size() == 1; }, 10'000ms));
    delete_key();
    int status = 0;
    BOOST_REQUIRE(wait_for_exit(once, 5000ms, &status));
    BOOST_TEST(exit_status(status) == 70, file_contents(log));
    BOOST_TEST(lines_of(file_contents(runs)).back() == "stop");

    std::filesystem::remove(runs);
    const auto again = spawn_elect(nodes, {"--ttl", "2s", "--kill-grace", "300ms", "--again"}, script, log);
    BOOST_REQUIRE(wait_until([&] { return lines_of(file_contents(runs)).size() == 1; }, 10'000ms));
    delete_key();
    BOOST_REQUIRE_MESSAGE(wait_until([&] { return lines_of(file_contents(runs)).size() == 3; }, 5000ms),
                          file_contents(runs) << file_contents(log));
    const auto seen = lines_of(file_contents(runs));
    BOOST_TEST(seen[1] == "stop");
    BOOST_TEST(std::stoull(seen[2].substr(6)) > std::stoull(seen[0].substr(6)), file_contents(runs));
    ::kill(again, SIGTERM);  // forwarded to the command, which exits 0
    BOOST_REQUIRE(wait_for_exit(again, 5000ms, &status));
    BOOST_TEST(exit_status(status) == 0, file_contents(log));
}

// With --again, a SIGTERM forwarded to the command while the leadership is lost ends redlock (70): the command does
// not run again. The command takes its time over the TERM (2 s), long enough for the watchdog to find the key gone.
BOOST_AUTO_TEST_CASE(a_signal_forwarded_as_the_leadership_is_lost_ends_again)
{
    cluster nodes(3);
    const auto dir = make_temp_dir("redlock-elect-");
    const auto log = dir + "/log", runs = dir + "/runs";
    const std::string script =
        "echo start >> " + runs + "; trap 'echo term >> " + runs + "; sleep 2; exit 0' TERM; " + until_exists("/x");
    const auto again = spawn_elect(nodes, {"--ttl", "2s", "--kill-grace", "300ms", "--again"}, script, log);
    BOOST_REQUIRE(wait_until([&] { return lines_of(file_contents(runs)).size() == 1; }, 10'000ms));
    ::kill(again, SIGTERM);
    BOOST_REQUIRE(wait_until([&] { return lines_of(file_contents(runs)).size() == 2; }, 5000ms));
    for (std::size_t i = 0; i < nodes.size(); ++i) nodes[i].cli({"DEL", key});
    int status = 0;
    const bool exited = wait_for_exit(again, 8000ms, &status);
    if (!exited) {
        ::kill(again, SIGKILL);
        wait_for_exit(again, 5000ms, &status);
    }
    BOOST_TEST(exited, "still running: " << file_contents(runs) << file_contents(log));
    BOOST_TEST(exit_status(status) == 70, file_contents(log));
    const auto seen = lines_of(file_contents(runs));
    BOOST_TEST(std::count(seen.begin(), seen.end(), "start") == 1, "the command ran again: " << file_contents(runs));
}

BOOST_AUTO_TEST_CASE(listen_prints_the_leader_and_each_change)
{
    cluster nodes(1);
    const auto dir = make_temp_dir("redlock-elect-");
    const auto heard = dir + "/heard";
    const auto listener = spawn_process({elect_args(nodes, {"--listen"}), environment_with({}), heard});
    BOOST_REQUIRE(wait_until([&] { return file_contents(heard) == "none\n"; }, 5000ms));
    const auto led = run_elect(nodes, {"--proposal", "a\tb\\c"}, "sleep 0.2");
    BOOST_TEST(led.exit_code == 0, led.err);
    BOOST_REQUIRE(wait_until([&] { return lines_of(file_contents(heard)).size() == 3; }, 5000ms));
    const auto lines = lines_of(file_contents(heard));
    BOOST_TEST(lines[1].substr(lines[1].find('\t') + 1) == "a\\tb\\\\c");
    BOOST_TEST(lines[2] == "none");
    ::kill(listener, SIGINT);
    int status = 0;
    BOOST_REQUIRE(wait_for_exit(listener, 5000ms, &status));
    BOOST_TEST(exit_status(status) == 0);
}

// --listen with its node down says so on stderr at once (not a silent wait), keeps trying, and prints the leader once
// the node is back.
BOOST_AUTO_TEST_CASE(listen_says_when_no_quorum_answers_and_keeps_trying)
{
    cluster nodes(1);
    nodes[0].kill();
    const auto dir = make_temp_dir("redlock-elect-");
    const auto heard = dir + "/heard";
    const auto listener = spawn_process({elect_args(nodes, {"--listen"}), environment_with({}), heard});
    BOOST_TEST(
        wait_until([&] { return file_contents(heard).find("cannot read who leads") != std::string::npos; }, 5000ms),
        file_contents(heard));
    nodes[0].restart();
    BOOST_TEST(wait_until([&] { return file_contents(heard).find("\nnone\n") != std::string::npos; }, 10'000ms),
               file_contents(heard));
    ::kill(listener, SIGINT);
    int status = 0;
    BOOST_REQUIRE(wait_for_exit(listener, 5000ms, &status));
    BOOST_TEST(exit_status(status) == 0);
}

BOOST_AUTO_TEST_CASE(bad_command_lines_exit_64)
{
    cluster nodes(1);
    for (const auto& args : std::vector<std::vector<std::string>>{
             {REDLOCK_CLI_PATH, "elect", "--", "true"},
             {REDLOCK_CLI_PATH, "elect", "--key", "k"},
             {REDLOCK_CLI_PATH, "elect", "--key", "k", "--listen", "--", "true"},
             {REDLOCK_CLI_PATH, "elect", "--key", "k", "--listen", "--again"},
             {REDLOCK_CLI_PATH, "elect", "--key", "k", "--ttl", "0", "--", "true"},
         }) {
        const auto r = run_command(args, 10'000ms);
        BOOST_TEST(r.exit_code == 64, args.back() << ": " << r.err);
    }
    const auto help = run_command({REDLOCK_CLI_PATH, "help", "elect"}, 10'000ms);
    BOOST_TEST(help.exit_code == 0);
    BOOST_TEST(help.out.find("--listen") != std::string::npos);
}
