// Three `redlock elect` candidates as processes, on 1 and 3 nodes, the leader's redlock killed with SIGKILL three times
// (a fresh candidate replaces each): never two leaders' commands at once, the killed leader's command stopped (the
// kernel's parent-death signal), a new leader's command within TTL + 1 s of the kill, terms strictly increasing; a
// `redlock elect --listen` process prints every leader in order.
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <chrono>
#include <common/processes/subprocess.hpp>
#include <common/run_coro.hpp>
#include <common/servers/redis_node.hpp>
#include <csignal>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
using namespace redlock::test;
using std::chrono::system_clock;

namespace {

const std::string key = "election";
// Loaded 2-core machines and sanitizer builds: an extension may come late. The command is stopped --kill-grace before
// the validity ends, so a grace of 300 ms leaves an extension (due every ttl / 3) about 1 s of slack.
constexpr auto ttl = 2000ms;
constexpr auto kill_grace = "300ms";

// What the commands log: "start TERM NS PID PPID VALUE" when they begin (PPID: their redlock), "end TERM NS" when they
// end (NS: wall-clock nanoseconds, `date +%s%N`).
struct run {
    std::uint64_t term = 0;
    long long started_ns = 0;
    long long ended_ns = 0;  // 0: no end logged (yet)
    pid_t pid = 0;           // the command
    pid_t redlock = 0;       // its candidate
    std::string value;
};

std::vector<run> runs_of(const std::string& events)
{
    std::vector<run> out;
    std::istringstream in(file_contents(events));
    for (std::string line; std::getline(in, line);) {
        std::istringstream words(line);
        std::string what;
        run r;
        words >> what >> r.term;
        if (what == "start") {
            words >> r.started_ns >> r.pid >> r.redlock >> r.value;
            out.push_back(r);
        } else if (what == "end") {
            long long ns = 0;
            words >> ns;
            for (auto& earlier : out)
                if (earlier.term == r.term) earlier.ended_ns = ns;
        }
    }
    return out;
}

long long now_ns()
{
    return std::chrono::duration_cast<std::chrono::nanoseconds>(system_clock::now().time_since_epoch()).count();
}

// A candidate whose command logs its start and its end (on SIGTERM, which the kernel sends it when its redlock dies)
// and otherwise runs until stopped.
pid_t spawn_candidate(const cluster& nodes, const std::string& events, const std::string& log, int id)
{
    const std::string script = "echo \"start $REDLOCK_TERM $(date +%s%N) $$ $PPID cand-" + std::to_string(id) +
                               "\" >> " + events + "; trap 'echo \"end $REDLOCK_TERM $(date +%s%N)\" >> " + events +
                               "; exit 0' TERM; while :; do sleep 0.02; done";
    return spawn_process({{REDLOCK_CLI_PATH, "elect", "--nodes", comma_joined(nodes.urls()), "--key", key, "--ttl",
                           std::to_string(ttl.count()) + "ms", "--kill-grace", kill_grace, "--proposal",
                           "cand-" + std::to_string(id), "--", "sh", "-c", script},
                          environment_with({}),
                          log});
}

// Running (a zombie nobody reaped yet has ended: its orphan is reparented to an init that may be slow to reap).
bool alive(pid_t pid)
{
    const auto stat = file_contents("/proc/" + std::to_string(pid) + "/stat");
    const auto close = stat.rfind(')');
    if (close == std::string::npos || close + 2 >= stat.size()) return false;
    const char state = stat[close + 2];
    return state != 'Z' && state != 'X';
}

}  // namespace

BOOST_AUTO_TEST_CASE(killing_the_leader_again_and_again_never_gives_two_leaders)
{
    for (std::size_t n : {1u, 3u}) {
        BOOST_TEST_CONTEXT(n << " nodes")
        {
            cluster nodes(n);
            const auto dir = make_temp_dir("redlock-elect-fault-");
            const auto events = dir + "/events", log = dir + "/log", heard = dir + "/listen";
            const auto listener = spawn_process({{REDLOCK_CLI_PATH, "elect", "--nodes", comma_joined(nodes.urls()),
                                                  "--key", key, "--ttl", "1s", "--listen"},
                                                 environment_with({}),
                                                 heard});
            std::vector<pid_t> candidates;
            int next_id = 0;
            for (; next_id < 3; ++next_id) candidates.push_back(spawn_candidate(nodes, events, log, next_id));
            BOOST_REQUIRE_MESSAGE(wait_until([&] { return runs_of(events).size() == 1; }, 10'000ms),
                                  file_contents(log));

            std::vector<long long> kills_ns;
            for (int round = 0; round < 3; ++round) {
                std::this_thread::sleep_for(300ms);  // it leads a while, its watchdog extending
                const auto leading = runs_of(events).back();
                BOOST_REQUIRE(std::find(candidates.begin(), candidates.end(), leading.redlock) != candidates.end());
                ::kill(leading.redlock, SIGKILL);
                kills_ns.push_back(now_ns());
                int status = 0;
                BOOST_REQUIRE(wait_for_exit(leading.redlock, 5000ms, &status));
                std::erase(candidates, leading.redlock);
                candidates.push_back(spawn_candidate(nodes, events, log, next_id++));
                // The killed leader's command is stopped at once, long before anyone else may lead.
                BOOST_TEST(wait_until([&] { return !alive(leading.pid); }, 1000ms),
                           "the killed candidate's command keeps running");
                BOOST_REQUIRE_MESSAGE(
                    wait_until([&] { return runs_of(events).size() == static_cast<std::size_t>(round) + 2; }, 5000ms),
                    "no new leader: " << file_contents(log));
            }
            // The leader forwards SIGTERM to its command, which ends (0); the others stop campaigning (128 + 15).
            for (auto pid : candidates) ::kill(pid, SIGTERM);
            int ended_leading = 0;
            for (auto pid : candidates) {
                int status = 0;
                BOOST_TEST(wait_for_exit(pid, 5000ms, &status));
                ended_leading += exit_status(status) == 0;
                BOOST_TEST((exit_status(status) == 0 || exit_status(status) == 128 + SIGTERM), file_contents(log));
            }
            BOOST_TEST(ended_leading == 1);
            std::this_thread::sleep_for(200ms);  // the listener hears the last resignation
            stop_process(listener, 2000ms);

            const auto runs = runs_of(events);
            BOOST_TEST_MESSAGE("runs: " << file_contents(events));
            BOOST_REQUIRE(runs.size() == 4u);
            for (std::size_t i = 0; i < runs.size(); ++i) {
                BOOST_TEST(runs[i].ended_ns != 0, "term " << runs[i].term << " never logged its end");
                if (i == 0) continue;
                BOOST_TEST(runs[i].term > runs[i - 1].term, "term " << runs[i].term << " after " << runs[i - 1].term);
                BOOST_TEST(runs[i].started_ns >= runs[i - 1].ended_ns,
                           "two leaders' commands at once: term "
                               << runs[i].term << " began " << (runs[i - 1].ended_ns - runs[i].started_ns) / 1000000
                               << " ms before term " << runs[i - 1].term << " ended");
                const auto after_kill_ms = (runs[i].started_ns - kills_ns[i - 1]) / 1'000'000;
                const auto stopped_ms = (runs[i - 1].ended_ns - kills_ns[i - 1]) / 1'000'000;
                BOOST_TEST_MESSAGE(n << " nodes: leader killed; its command ended " << stopped_ms
                                     << " ms later; the next leader's command began " << after_kill_ms
                                     << " ms after the kill (TTL " << ttl.count() << " ms)");
                BOOST_TEST(after_kill_ms <= (ttl + 1000ms).count());
            }

            // The listener printed every leader, in order (a "none" may come between two).
            std::istringstream lines(file_contents(heard));
            std::vector<std::pair<std::uint64_t, std::string>> leaders;
            for (std::string line; std::getline(lines, line);) {
                if (line == "none") continue;
                const auto tab = line.find('\t');
                BOOST_REQUIRE_MESSAGE(tab != std::string::npos, "not a leader line: " << line);
                leaders.emplace_back(std::stoull(line.substr(0, tab)), line.substr(tab + 1));
            }
            BOOST_TEST_MESSAGE("listener: " << file_contents(heard));
            BOOST_REQUIRE(leaders.size() == runs.size());
            for (std::size_t i = 0; i < runs.size(); ++i) {
                BOOST_TEST(leaders[i].first == runs[i].term);
                BOOST_TEST(leaders[i].second == runs[i].value);
            }
            BOOST_TEST(file_contents(heard).ends_with("none\n"), "the last resignation was not heard");
        }
    }
}
