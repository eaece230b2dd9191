// `redlock exec --limit N` (a semaphore's permit around a command), `redlock status` on a semaphore and
// `redlock bench --scenario semaphore`, with the CLI run as a process against real nodes.
#include <boost/json/src.hpp>  // header-only Boost.JSON, to parse `bench --json`
#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <chrono>
#include <common/processes/subprocess.hpp>
#include <common/run_coro.hpp>
#include <common/servers/redis_node.hpp>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
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

std::string redis_cli(const redis_node& node)
{
    return cli_program() + " -h 127.0.0.1 -p " + std::to_string(node.port());
}

// Permits in the semaphore's sorted set on each running node, summed: one member each, and `exec` takes one unit.
long units_on(const cluster& nodes, const std::string& key)
{
    long n = 0;
    for (std::size_t i = 0; i < nodes.size(); ++i)
        if (nodes[i].running()) n += std::stol(nodes[i].cli({"ZCARD", key}));
    return n;
}

bool is_hex_token(const std::string& s)
{
    return s.size() == 32 && s.find_first_not_of("0123456789abcdef") == std::string::npos;
}

std::string unreachable_nodes(std::size_t n)
{
    std::vector<std::string> urls;
    for (auto port : pick_free_ports(n)) urls.push_back("redis://127.0.0.1:" + std::to_string(port));
    return comma_joined(urls);
}

// `redlock exec --limit N` in the background, running `script` under a permit; its output appended to `log`.
pid_t spawn_exec(const cluster& nodes, const std::string& key, int limit, const std::string& script,
                 const std::string& log, std::vector<std::string> extra = {})
{
    std::vector<std::string> args{REDLOCK_CLI_PATH, "exec", "--nodes", comma_joined(nodes.urls()),
                                  "--key",          key,    "--limit", std::to_string(limit),
                                  "--wait",         "60s",  "--ttl",   "30s"};
    args.insert(args.end(), extra.begin(), extra.end());
    for (const auto& a : {"--", "sh", "-c"}) args.emplace_back(a);
    args.push_back(script);
    return spawn_process({args, environment_with({}), log});
}

std::vector<int> numbers_in(const std::string& path)
{
    std::vector<int> out;
    std::ifstream in(path);
    for (int n; in >> n;) out.push_back(n);
    return out;
}

std::size_t lines_in(const std::string& path, const std::string& word)
{
    std::size_t n = 0;
    std::istringstream in(file_contents(path));
    for (std::string line; std::getline(in, line);) n += line.find(word) != std::string::npos;
    return n;
}

// A script that waits for `path` to exist: a holder that lets go when the test says so.
std::string until_exists(const std::string& path)
{
    return "while [ ! -e " + path + " ]; do sleep 0.02; done";
}

// Waiters queued for the fair semaphore `key` on `node`.
std::size_t fair_waiters(const redis_node& node, const std::string& key)
{
    return std::stoul(node.cli({"ZCARD", "{" + key + "}:queue"}));
}

}  // namespace

BOOST_AUTO_TEST_SUITE(cli_semaphore)

// Six processes at once under a semaphore of `limit`: the commands count themselves in and out on a separate
// counter node, and record how many were in when they entered. Never above the limit, the limit reached (the
// semaphore is not a mutex), and every command ran. Both limits: the check tells 2 from 3.
BOOST_DATA_TEST_CASE(at_most_limit_commands_run_at_once_and_every_one_runs, boost::unit_test::data::make({2, 3}), limit)
{
    cluster nodes(3);
    redis_node counter;
    const auto dir = make_temp_dir("redlock-sem-");
    const auto inside = dir + "/inside";
    const auto log = dir + "/log";
    const std::string script = "n=$(" + redis_cli(counter) + " INCR running); echo \"$n\" >> " + inside +
                               "; sleep 1; " + redis_cli(counter) + " DECR running >/dev/null";
    constexpr int processes = 6;
    std::vector<pid_t> pids;
    for (int i = 0; i < processes; ++i) pids.push_back(spawn_exec(nodes, "pool", limit, script, log));
    for (auto pid : pids) {
        int status = 0;
        const bool exited = wait_for_exit(pid, 60s, &status);
        if (!exited) stop_process(pid, 1s);
        BOOST_REQUIRE(exited);
        BOOST_TEST(exit_status(status) == 0, "output: " << file_contents(log));
    }
    const auto seen = numbers_in(inside);
    BOOST_TEST(seen.size() == static_cast<std::size_t>(processes), "every command ran once: " << file_contents(inside));
    const int most = seen.empty() ? 0 : *std::max_element(seen.begin(), seen.end());
    BOOST_TEST(most <= limit, "at most " << limit << " commands at once, saw " << most);
    BOOST_TEST(most == limit, "up to " << limit << " commands side by side, saw " << most);
    BOOST_TEST(counter.cli({"GET", "running"}) == "0");
    BOOST_TEST(units_on(nodes, "pool") == 0);  // every permit released, not left to expire
    std::filesystem::remove_all(dir);
}

BOOST_AUTO_TEST_CASE(the_child_sees_the_key_the_permit_id_and_the_limit)
{
    cluster nodes(3);
    const std::string score = redis_cli(nodes[1]) + " ZSCORE \"$REDLOCK_KEY\" \"$REDLOCK_PERMIT_ID\"";
    ::setenv("REDLOCK_FENCING_TOKEN", "999", 1);  // an outer lock's: must not leak in
    auto r = redlock_cli({"exec", "--nodes", comma_joined(nodes.urls()), "--key", "env:pool", "--limit", "3", "--",
                          "sh", "-c",
                          "echo $REDLOCK_KEY $REDLOCK_PERMIT_ID $REDLOCK_LIMIT $REDLOCK_TOKEN "
                          "${REDLOCK_FENCING_TOKEN:-none}; " +
                              score});
    ::unsetenv("REDLOCK_FENCING_TOKEN");
    BOOST_TEST_INFO("stderr: " << r.err);
    BOOST_REQUIRE(r.exit_code == 0);
    std::istringstream out(r.out);
    std::string key, id, limit, token, fencing, stored;
    out >> key >> id >> limit >> token >> fencing >> stored;
    BOOST_TEST(key == "env:pool");
    BOOST_TEST(is_hex_token(id));
    BOOST_TEST(limit == "3");
    BOOST_TEST(token == id);
    BOOST_TEST(fencing == "none");
    BOOST_TEST(!stored.empty(), "the permit id is a member of the semaphore's set while the command runs");

    // A lock inside a semaphore's command: the permit's variables do not leak into the lock's command.
    ::setenv("REDLOCK_PERMIT_ID", id.c_str(), 1);
    ::setenv("REDLOCK_LIMIT", "3", 1);
    r = redlock_cli({"exec", "--nodes", comma_joined(nodes.urls()), "--key", "inner", "--", "sh", "-c",
                     "echo ${REDLOCK_PERMIT_ID:-none} ${REDLOCK_LIMIT:-none}"});
    ::unsetenv("REDLOCK_PERMIT_ID");
    ::unsetenv("REDLOCK_LIMIT");
    BOOST_TEST(r.exit_code == 0, "stderr: " << r.err);
    BOOST_TEST(r.out == "none none\n");
}

// Exit codes as for a lock: a full semaphore is a lock held by others (75), the command's own code otherwise,
// and the permit is released whatever the code.
BOOST_AUTO_TEST_CASE(a_full_semaphore_exits_75_and_the_commands_own_code_comes_back)
{
    cluster nodes(3);
    const auto urls = comma_joined(nodes.urls());
    const auto dir = make_temp_dir("redlock-sem-");
    const auto go = dir + "/go";
    const auto log = dir + "/log";
    std::vector<pid_t> holders;
    for (int i = 0; i < 2; ++i)
        holders.push_back(spawn_exec(nodes, "full", 2, "echo holding; " + until_exists(go), log));
    BOOST_REQUIRE(wait_until([&] { return lines_in(log, "holding") == 2u; }, 10s));

    auto start = steady_clock::now();
    auto r = redlock_cli(
        {"exec", "--nodes", urls, "--key", "full", "--limit", "2", "--wait", "200ms", "--", "sh", "-c", "echo ran"});
    BOOST_TEST(r.exit_code == 75, "stderr: " << r.err);
    BOOST_TEST(elapsed_ms(start) >= 180);
    BOOST_TEST(r.out.find("ran") == std::string::npos);
    BOOST_TEST(
        r.err.find("could not acquire a permit of semaphore 'full' (limit 2) within --wait 200ms") != std::string::npos,
        "stderr: " << r.err);
    BOOST_TEST(r.err.find("every permit is taken") != std::string::npos, "stderr: " << r.err);
    BOOST_TEST(r.err.find("refused (no permit free there)") != std::string::npos, "stderr: " << r.err);

    r = redlock_cli({"exec", "--nodes", urls, "--key", "full", "--limit", "2", "--wait", "0", "-q", "--", "true"});
    BOOST_TEST(r.exit_code == 75);
    BOOST_TEST(!r.err.empty());                // -q still prints errors
    BOOST_TEST(units_on(nodes, "full") == 6);  // the two holders' permits on 3 nodes, nothing of the refused ones

    std::ofstream(go).put('\n');
    for (auto pid : holders) {
        int status = 0;
        BOOST_REQUIRE(wait_for_exit(pid, 10s, &status));
        BOOST_TEST(exit_status(status) == 0);
    }
    BOOST_TEST(units_on(nodes, "full") == 0);
    for (const auto& [script, code] :
         std::vector<std::pair<std::string, int>>{{"exit 0", 0}, {"exit 3", 3}, {"kill -KILL $$", 128 + SIGKILL}}) {
        r = redlock_cli(
            {"exec", "--nodes", urls, "--key", "full", "--limit", "2", "--wait", "0", "--", "sh", "-c", script});
        BOOST_TEST(r.exit_code == code, script << ": stderr: " << r.err);
        BOOST_TEST(units_on(nodes, "full") == 0);  // released, not left to expire after 30 s
    }
    std::filesystem::remove_all(dir);
}

// Signals as for a lock: one sent while waiting for a permit ends the wait (128 + N, the command not run, nothing
// left queued), one sent while the command runs is forwarded to it.
BOOST_AUTO_TEST_CASE(signals_end_the_wait_or_reach_the_command)
{
    cluster nodes(1);
    const auto dir = make_temp_dir("redlock-sem-");
    const auto go = dir + "/go";
    const auto log = dir + "/log";
    const auto holder = spawn_exec(nodes, "sig", 2, "echo holding; " + until_exists(go), log);
    const auto trapper = spawn_exec(nodes, "sig", 2, "trap 'exit 42' TERM; echo ready; sleep 30 & wait", log);
    BOOST_REQUIRE(wait_until([&] { return lines_in(log, "holding") + lines_in(log, "ready") == 2u; }, 10s));

    const auto waiter = spawn_exec(nodes, "sig", 2, "echo ran", log, {"--fair"});
    BOOST_REQUIRE(wait_until([&] { return fair_waiters(nodes[0], "sig") == 1u; }, 5s));
    ::kill(waiter, SIGTERM);
    int status = 0;
    BOOST_REQUIRE(wait_for_exit(waiter, 5s, &status));
    BOOST_TEST(exit_status(status) == 128 + SIGTERM);
    BOOST_TEST(lines_in(log, "ran") == 0u);
    BOOST_TEST(lines_in(log, "interrupted by SIGTERM while waiting for a permit of semaphore 'sig' (limit 2)") == 1u,
               "output: " << file_contents(log));
    // It left the queue, rather than staying there until its heartbeat's TTL (2 s) dropped it.
    BOOST_TEST(wait_until([&] { return fair_waiters(nodes[0], "sig") == 0u; }, 1s));

    ::kill(trapper, SIGTERM);
    BOOST_REQUIRE(wait_for_exit(trapper, 5s, &status));
    BOOST_TEST(exit_status(status) == 42, "output: " << file_contents(log));
    std::ofstream(go).put('\n');
    BOOST_REQUIRE(wait_for_exit(holder, 5s, &status));
    BOOST_TEST(units_on(nodes, "sig") == 0);
    std::filesystem::remove_all(dir);
}

BOOST_AUTO_TEST_CASE(unreachable_nodes_exit_69_when_the_wait_runs_out)
{
    auto r = redlock_cli(
        {"exec", "--nodes", unreachable_nodes(3), "--key", "k", "--limit", "2", "--wait", "300ms", "--", "true"});
    BOOST_TEST(r.exit_code == 69);
    BOOST_TEST(r.err.find("could not acquire a permit of semaphore 'k'") != std::string::npos, "stderr: " << r.err);
    BOOST_TEST(r.err.find("no quorum") != std::string::npos, "stderr: " << r.err);
}

// -v says the quorum a permit needs and the failures it tolerates; plainly when no node may fail.
BOOST_AUTO_TEST_CASE(verbose_says_the_quorum_and_when_no_node_may_fail)
{
    cluster nodes(5);
    const std::vector<std::string> all = nodes.urls();
    const std::vector<std::string> three(all.begin(), all.begin() + 3);
    auto r = redlock_cli({"exec", "-v", "--nodes", comma_joined(three), "--key", "talk", "--limit", "2", "--", "true"});
    BOOST_TEST(r.exit_code == 0, "stderr: " << r.err);
    BOOST_TEST(r.err.find("semaphore 'talk' with limit 2 on 3 node(s), quorum 3, tolerates 0 node failure(s)") !=
                   std::string::npos,
               "stderr: " << r.err);
    BOOST_TEST(r.err.find("no node may fail") != std::string::npos, "stderr: " << r.err);
    BOOST_TEST(r.err.find("acquired a permit of 'talk' in") != std::string::npos, "stderr: " << r.err);
    BOOST_TEST(r.err.find("released 'talk' in") != std::string::npos, "stderr: " << r.err);

    r = redlock_cli({"exec", "-v", "--nodes", comma_joined(all), "--key", "talk", "--limit", "2", "--", "true"});
    BOOST_TEST(r.exit_code == 0, "stderr: " << r.err);
    BOOST_TEST(r.err.find("on 5 node(s), quorum 4, tolerates 1 node failure(s)") != std::string::npos,
               "stderr: " << r.err);
    BOOST_TEST(r.err.find("no node may fail") == std::string::npos, "stderr: " << r.err);

    r = redlock_cli({"exec", "--nodes", comma_joined(all), "--key", "talk", "--limit", "2", "--", "true"});
    BOOST_TEST(r.err.empty(), "nothing on stderr without -v: " << r.err);
}

// Processes that queue one after another for a fair semaphore run their commands in that order. One holder keeps
// a permit to the end, so one permit goes round the queue: each grant comes after the previous command exited,
// and the order the commands write in is the order of the grants.
BOOST_AUTO_TEST_CASE(fair_exec_serves_processes_in_the_order_they_arrived)
{
    cluster nodes(3);
    const auto dir = make_temp_dir("redlock-sem-fair-");
    const std::string key = "fifo-pool";
    const auto order = dir + "/order";
    const auto log = dir + "/log";
    std::vector<pid_t> holders;
    for (const char* until : {"/go", "/end"})
        holders.push_back(spawn_exec(nodes, key, 2, "echo holding; " + until_exists(dir + until), log, {"--fair"}));
    BOOST_REQUIRE(wait_until([&] { return lines_in(log, "holding") == 2u; }, 10s));
    constexpr int waiters = 12;
    std::vector<pid_t> pids;
    for (int i = 0; i < waiters; ++i) {
        pids.push_back(spawn_exec(nodes, key, 2, "echo " + std::to_string(i) + " >> " + order, log, {"--fair"}));
        BOOST_REQUIRE_MESSAGE(
            wait_until([&] { return fair_waiters(nodes[0], key) == static_cast<std::size_t>(i + 1); }, 5s),
            "process " << i << " did not join the queue");
    }
    std::ofstream(dir + "/go").put('\n');
    int status = 0;
    for (auto pid : pids) {
        BOOST_REQUIRE(wait_for_exit(pid, 30s, &status));
        BOOST_TEST(exit_status(status) == 0);
    }
    std::ofstream(dir + "/end").put('\n');
    for (auto pid : holders) BOOST_TEST(wait_for_exit(pid, 10s, &status));
    std::vector<int> expected(waiters);
    for (int i = 0; i < waiters; ++i) expected[static_cast<std::size_t>(i)] = i;
    BOOST_TEST(numbers_in(order) == expected, boost::test_tools::per_element());
    BOOST_TEST(fair_waiters(nodes[0], key) == 0u);
    std::filesystem::remove_all(dir);
}

// status on a semaphore: per node the limit, the permits held and free, each permit; the holders on a quorum;
// and, with 3 nodes and limit 2 (quorum 3), that no node may fail. On 5 nodes the same limit tolerates one.
BOOST_AUTO_TEST_CASE(status_shows_a_semaphores_holders_and_says_when_no_node_may_fail)
{
    cluster five(5);
    const auto all = five.urls();
    const std::vector<std::string> three(all.begin(), all.begin() + 3);
    const auto dir = make_temp_dir("redlock-sem-");
    const auto go = dir + "/go";
    const auto log = dir + "/log";
    std::vector<pid_t> holders;
    for (int i = 0; i < 2; ++i) {
        std::vector<std::string> args{REDLOCK_CLI_PATH,
                                      "exec",
                                      "--nodes",
                                      comma_joined(three),
                                      "--key",
                                      "jobs",
                                      "--limit",
                                      "2",
                                      "--wait",
                                      "10s",
                                      "--",
                                      "sh",
                                      "-c",
                                      "echo id=$REDLOCK_PERMIT_ID; " + until_exists(go)};
        holders.push_back(spawn_process({args, environment_with({}), log}));
    }
    BOOST_REQUIRE(wait_until([&] { return lines_in(log, "id=") == 2u; }, 10s));
    std::vector<std::string> ids;
    {
        std::istringstream in(file_contents(log));
        for (std::string line; std::getline(in, line);)
            if (line.starts_with("id=")) ids.push_back(line.substr(3));
    }
    BOOST_REQUIRE(ids.size() == 2u);

    auto r = redlock_cli({"status", "--nodes", comma_joined(three), "--key", "jobs"});
    BOOST_TEST(r.exit_code == 0, "stderr: " << r.err);
    BOOST_TEST(r.out.find("semaphore 'jobs' on 3 node(s), limit 2, quorum 3") != std::string::npos,
               "stdout: " << r.out);
    BOOST_TEST(r.out.find("limit 2  held 2  available 0  waiters 0") != std::string::npos, "stdout: " << r.out);
    for (const auto& id : ids) {
        BOOST_TEST(r.out.find("permit " + id + "  count 1  ttl ") != std::string::npos, "stdout: " << r.out);
        BOOST_TEST(r.out.find("\n  " + id + "  count 1") != std::string::npos, "a holder on a quorum: " << r.out);
    }
    BOOST_TEST(r.out.find("holders: 2 permits held on a quorum (2 of 2 taken)") != std::string::npos,
               "stdout: " << r.out);
    BOOST_TEST(r.out.find("the semaphore tolerates no node failure") != std::string::npos, "stdout: " << r.out);
    BOOST_TEST(r.out.find("lock '") == std::string::npos, "not shown as a lock: " << r.out);

    std::ofstream(go).put('\n');
    int status = 0;
    for (auto pid : holders) BOOST_REQUIRE(wait_for_exit(pid, 10s, &status));
    // Idle: no permit left, only the limit the nodes keep; still a semaphore, not a free lock.
    r = redlock_cli({"status", "--nodes", comma_joined(three), "--key", "jobs"});
    BOOST_TEST(r.exit_code == 0, "stderr: " << r.err);
    BOOST_TEST(r.out.find("semaphore 'jobs'") != std::string::npos, "stdout: " << r.out);
    BOOST_TEST(r.out.find("holders: none on a quorum") != std::string::npos, "stdout: " << r.out);

    // One node down: quorum 3 of 3 cannot be met.
    five[2].kill();
    r = redlock_cli(
        {"exec", "--nodes", comma_joined(three), "--key", "jobs", "--limit", "2", "--wait", "0", "--", "true"});
    BOOST_TEST(r.exit_code == 69, "stderr: " << r.err);

    // The same limit on 5 nodes: quorum 4, one failure tolerated.
    const auto five_go = dir + "/go5";
    holders.clear();
    holders.push_back(
        spawn_process({{REDLOCK_CLI_PATH, "exec", "--nodes", comma_joined(all), "--key", "wide", "--limit", "2",
                        "--wait", "10s", "--", "sh", "-c", "echo wide; " + until_exists(five_go)},
                       environment_with({}),
                       log}));
    BOOST_REQUIRE(wait_until([&] { return lines_in(log, "wide") == 1u; }, 10s));
    r = redlock_cli({"status", "--nodes", comma_joined(all), "--key", "wide"});
    BOOST_TEST(r.exit_code == 0, "stderr: " << r.err);  // 4 of 5 reachable: the quorum
    BOOST_TEST(r.out.find("semaphore 'wide' on 5 node(s), limit 2, quorum 4") != std::string::npos,
               "stdout: " << r.out);
    BOOST_TEST(r.out.find("holders: 1 permit held on a quorum") != std::string::npos, "stdout: " << r.out);
    BOOST_TEST(r.out.find("unreachable") != std::string::npos, "stdout: " << r.out);
    BOOST_TEST(r.out.find("tolerates 1 node failure") != std::string::npos, "stdout: " << r.out);
    BOOST_TEST(r.err.find("1 of 5 nodes unreachable") != std::string::npos, "stderr: " << r.err);
    std::ofstream(five_go).put('\n');
    for (auto pid : holders) BOOST_REQUIRE(wait_for_exit(pid, 10s, &status));

    // Below a permit's quorum: 69.
    five[3].kill();
    r = redlock_cli({"status", "--nodes", comma_joined(all), "--key", "wide"});
    BOOST_TEST(r.exit_code == 69, "stdout: " << r.out << "stderr: " << r.err);
    BOOST_TEST(r.err.find("only 3 of 5 nodes reachable; a permit needs 4") != std::string::npos, "stderr: " << r.err);
    std::filesystem::remove_all(dir);
}

BOOST_AUTO_TEST_CASE(bench_json_has_the_documented_keys)
{
    cluster nodes(3);
    auto r = redlock_cli({"bench", "--nodes", comma_joined(nodes.urls()), "--scenario", "semaphore", "--clients", "4",
                          "--limit", "2", "--duration", "700ms", "--json"});
    BOOST_TEST_REQUIRE(r.exit_code == 0, "stderr: " << r.err);
    boost::json::error_code ec;
    auto doc = boost::json::parse(r.out, ec);
    BOOST_REQUIRE_MESSAGE(!ec && doc.is_object(), "not a JSON object: " << r.out);
    const auto& o = doc.as_object();
    std::vector<std::string> keys;
    for (const auto& kv : o) keys.emplace_back(kv.key());
    const std::vector<std::string> documented{
        "scenario",    "fencing",       "nodes",          "clients",          "workers",       "ops",
        "ops_per_sec", "cpu_us_per_op", "user_us_per_op", "sys_us_per_op",    "allocs_per_op", "acquire_us",
        "handoff_us",  "limit",         "fair",           "max_held",         "first_try",     "first_try_us",
        "waited",      "waited_us",     "attempts",       "woken_by_release", "timed_retries", "errors"};
    BOOST_TEST(keys == documented, boost::test_tools::per_element());
    BOOST_TEST(o.at("scenario").as_string() == "semaphore");
    BOOST_TEST(o.at("clients").as_int64() == 4);
    BOOST_TEST(o.at("workers").as_int64() == 1);
    BOOST_TEST(o.at("limit").as_int64() == 2);
    BOOST_TEST(o.at("fair").as_bool() == false);
    const auto ops = o.at("ops").as_int64();
    BOOST_TEST(ops > 0);
    BOOST_TEST(o.at("max_held").as_int64() >= 1);
    BOOST_TEST(o.at("max_held").as_int64() <= 2);  // never more permits at once than the limit
    BOOST_TEST(o.at("first_try").as_int64() + o.at("waited").as_int64() >= ops);
    BOOST_TEST(o.at("attempts").as_int64() >= ops);
    BOOST_TEST(o.at("errors").as_int64() == 0);
    const auto& acquire = o.at("acquire_us").as_object();
    for (const char* k : {"p50", "p90", "p99", "max"}) BOOST_TEST(acquire.at(k).is_int64());
    for (const char* split : {"first_try_us", "waited_us"}) {
        const auto& latency = o.at(split).as_object();
        BOOST_TEST(latency.size() == 3u);
        for (const char* k : {"p50", "p99", "max"}) BOOST_TEST((latency.at(k).is_int64() || latency.at(k).is_null()));
    }
    for (std::size_t i = 0; i < nodes.size(); ++i)  // every permit given back: the permits' set is gone
        BOOST_TEST(nodes[i].cli({"KEYS", "redlock-bench:*"}).empty());

    // The default limit is half the workers, and --fair works too; the table says what it measured.
    r = redlock_cli(
        {"bench", "--nodes", comma_joined(nodes.urls()), "--scenario", "semaphore", "--fair", "--duration", "500ms"});
    BOOST_TEST(r.exit_code == 0, "stderr: " << r.err);
    BOOST_TEST(r.out.find("8 x 1 worker(s)") != std::string::npos, "stdout: " << r.out);
    BOOST_TEST(r.out.find("semaphore    limit 4, fair") != std::string::npos, "stdout: " << r.out);
    BOOST_TEST(r.out.find("found room at once") != std::string::npos, "stdout: " << r.out);
}

BOOST_AUTO_TEST_CASE(usage_errors_exit_64_before_any_io)
{
    const auto nowhere = unreachable_nodes(3);
    struct usage_case {
        std::vector<std::string> args;
        std::string says;
    };
    const std::vector<usage_case> cases = {
        {{"exec", "--nodes", nowhere, "--key", "k", "--limit", "0", "--", "true"}, "--limit: '0' is not a positive"},
        {{"exec", "--nodes", nowhere, "--key", "k", "--limit", "-1", "--", "true"}, "--limit: '-1' is not a positive"},
        {{"exec", "--nodes", nowhere, "--key", "k", "--limit", "two", "--", "true"}, "--limit"},
        {{"exec", "--nodes", nowhere, "--key", "k", "--limit", "1000001", "--", "true"}, "at most 1000000"},
        {{"exec", "--nodes", nowhere, "--key", "k", "--limit", "3", "--fencing", "--", "true"},
         "--fencing goes with a lock"},
        {{"exec", "--nodes", nowhere, "--key", "k", "--fencing", "--limit", "2", "--", "true"},
         "--fencing goes with a lock"},
        {{"bench", "--nodes", nowhere, "--scenario", "semaphore", "--limit", "0"}, "--limit"},
        {{"bench", "--nodes", nowhere, "--scenario", "semaphore", "--fencing"}, "--fencing"},
        {{"bench", "--nodes", nowhere, "--limit", "3"}, "--limit goes with --scenario semaphore"},
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
    // --limit 1 is a lock, with fencing as before.
    cluster nodes(1);
    auto r = redlock_cli({"exec", "--nodes", comma_joined(nodes.urls()), "--key", "one", "--limit", "1", "--fencing",
                          "--", "sh", "-c", "echo $REDLOCK_FENCING_TOKEN ${REDLOCK_PERMIT_ID:-none}"});
    BOOST_TEST(r.exit_code == 0, "stderr: " << r.err);
    BOOST_TEST(r.out == "1 none\n");
}

BOOST_AUTO_TEST_SUITE_END()
