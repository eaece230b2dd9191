// `redlock exec --shared` and `redlock exec` on one key, as processes, on 1 and 3 nodes: shared holders run together
// and a plain exec runs alone; a plain exec that waits (behind readers or a writer) holds back readers that come after
// it; what each side leaves on the nodes while it holds.
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
#include <thread>
#include <vector>

using namespace std::chrono_literals;
using namespace redlock::test;

namespace {

const std::string key = "rw";

std::string redis_cli_path()
{
    return find_executable("redis-cli", "REDLOCK_REDIS_CLI");
}

// Who is inside, kept on an observer node of its own by the commands (redis-cli, one atomic script per step): the
// one that enters second sees the other, so any overlap of a writer with anyone is counted in `bad`.
std::string enter_read(const redis_node& observer, int id)
{
    return redis_cli_path() + " -p " + std::to_string(observer.port()) +
           " EVAL \"local n = redis.call('INCR', 'r'); redis.call('RPUSH', 'log', ARGV[1]); "
           "if tonumber(redis.call('GET', 'w') or '0') > 0 then redis.call('INCR', 'bad') end; "
           "if n > tonumber(redis.call('GET', 'most') or '0') then redis.call('SET', 'most', n) end\" 0 R" +
           std::to_string(id) + " > /dev/null";
}
std::string enter_write(const redis_node& observer, int id)
{
    return redis_cli_path() + " -p " + std::to_string(observer.port()) +
           " EVAL \"local n = redis.call('INCR', 'w'); redis.call('RPUSH', 'log', ARGV[1]); "
           "if n ~= 1 or tonumber(redis.call('GET', 'r') or '0') > 0 then redis.call('INCR', 'bad') end\" 0 W" +
           std::to_string(id) + " > /dev/null";
}
std::string leave(const redis_node& observer, const std::string& counter)
{
    return redis_cli_path() + " -p " + std::to_string(observer.port()) + " DECR " + counter + " > /dev/null";
}

// `redlock exec` in the background (`shared`: --shared), running `script` under the lock.
pid_t spawn_exec(const cluster& nodes, bool shared, const std::string& script, const std::string& log,
                 std::vector<std::string> extra = {})
{
    std::vector<std::string> args{REDLOCK_CLI_PATH, "exec", "--nodes", comma_joined(nodes.urls()), "--key", key};
    if (shared) args.emplace_back("--shared");
    args.insert(args.end(), extra.begin(), extra.end());
    for (const auto& a : {"--", "sh", "-c"}) args.emplace_back(a);
    args.push_back(script);
    return spawn_process({args, environment_with({}), log});
}

// Writers' marks on a quorum of the nodes: a reader that asks now waits behind them.
bool writer_marked(const cluster& nodes)
{
    return wait_until(
        [&] {
            std::size_t marked = 0;
            for (std::size_t i = 0; i < nodes.size(); ++i)
                if (nodes[i].cli({"ZCARD", "{rw}:writers"}) != "0") ++marked;
            return marked >= nodes.size() / 2 + 1;
        },
        5000ms);
}

std::vector<std::string> words(const std::string& text)
{
    std::vector<std::string> out;
    std::istringstream in(text);
    for (std::string w; in >> w;) out.push_back(w);
    return out;
}

}  // namespace

// Six --shared processes and three plain ones at once: the readers run together (at least two at a time), a writer
// never beside anyone, every one of them runs, and nothing is left on the nodes.
BOOST_AUTO_TEST_CASE(shared_execs_run_together_and_a_plain_exec_runs_alone)
{
    for (std::size_t n : {1u, 3u}) {
        BOOST_TEST_CONTEXT(n << " nodes")
        {
            cluster nodes(n);
            redis_node observer;
            const auto dir = make_temp_dir("redlock-rw-");
            const auto log = dir + "/log";
            std::vector<pid_t> pids;
            for (int i = 0; i < 6; ++i)
                pids.push_back(
                    spawn_exec(nodes, true, enter_read(observer, i) + "; sleep 0.4; " + leave(observer, "r"), log));
            for (int i = 0; i < 3; ++i)
                pids.push_back(
                    spawn_exec(nodes, false, enter_write(observer, i) + "; sleep 0.2; " + leave(observer, "w"), log));
            for (auto pid : pids) {
                int status = 0;
                BOOST_REQUIRE(wait_for_exit(pid, 30'000ms, &status));
                BOOST_TEST(exit_status(status) == 0, file_contents(log));
            }
            const auto entered = words(observer.cli({"LRANGE", "log", "0", "-1"}));
            BOOST_TEST(entered.size() == 9u, observer.cli({"LRANGE", "log", "0", "-1"}));
            BOOST_TEST(observer.cli({"GET", "bad"}).empty(),
                       "a writer beside someone " << observer.cli({"GET", "bad"}));
            BOOST_TEST(std::stoi(observer.cli({"GET", "most"})) >= 2, "the readers never ran together");
            for (std::size_t i = 0; i < n; ++i)
                for (const auto& k : {key, std::string("{rw}:readers"), std::string("{rw}:writers")})
                    BOOST_TEST(nodes[i].cli({"EXISTS", k}) == "0", "node " << i << " keeps " << k);
            std::filesystem::remove_all(dir);
        }
    }
}

// A plain exec that finds a --shared holder waits as the writer (as every waiting plain exec does), and so holds back
// --shared processes that come after it: one that tries once is refused (exit 75) although only a reader holds, one
// that waits runs after the writer.
BOOST_AUTO_TEST_CASE(a_waiting_plain_exec_goes_before_readers_that_come_after_it)
{
    for (std::size_t n : {1u, 3u}) {
        BOOST_TEST_CONTEXT(n << " nodes")
        {
            cluster nodes(n);
            redis_node observer;
            const auto dir = make_temp_dir("redlock-rw-");
            const auto log = dir + "/log";
            const auto gate = dir + "/go";
            const auto record = [&](const std::string& what) {
                return redis_cli_path() + " -p " + std::to_string(observer.port()) + " RPUSH order " + what +
                       " > /dev/null";
            };
            // The first reader holds until the gate opens (at most 30 s).
            const auto first = spawn_exec(
                nodes, true,
                record("R1") + "; i=0; while [ ! -e " + gate + " ] && [ $i -lt 1500 ]; do sleep 0.02; i=$((i+1)); done",
                log);
            BOOST_REQUIRE(wait_until([&] { return observer.cli({"LLEN", "order"}) == "1"; }, 10'000ms));
            const auto writer = spawn_exec(nodes, false, record("W"), log);
            BOOST_REQUIRE_MESSAGE(writer_marked(nodes), "the writer's wait is not marked: " << file_contents(log));
            auto tried = run_command({REDLOCK_CLI_PATH, "exec", "--nodes", comma_joined(nodes.urls()), "--key", key,
                                      "--shared", "--wait", "0", "--", "true"},
                                     20'000ms);
            BOOST_TEST(tried.exit_code == 75, "a reader passed a waiting writer: " << tried.err);
            const auto late = spawn_exec(nodes, true, record("R2"), log);
            std::this_thread::sleep_for(300ms);
            std::ofstream(gate).put('\n');
            for (auto pid : {first, writer, late}) {
                int status = 0;
                BOOST_REQUIRE(wait_for_exit(pid, 30'000ms, &status));
                BOOST_TEST(exit_status(status) == 0, file_contents(log));
            }
            BOOST_TEST(
                words(observer.cli({"LRANGE", "order", "0", "-1"})) == (std::vector<std::string>{"R1", "W", "R2"}),
                boost::test_tools::per_element());
            std::filesystem::remove_all(dir);
        }
    }
}

// A plain exec that waits behind another plain exec marks its wait too (whoever holds when it starts waiting, readers
// that come later must queue behind it, or a stream of them could keep it out for good), and the holder's release
// message wakes it: it runs at once, not at the holder's 30 s TTL.
BOOST_AUTO_TEST_CASE(a_plain_exec_waiting_behind_a_plain_holder_marks_its_wait_and_wakes_at_the_release)
{
    for (std::size_t n : {1u, 3u}) {
        BOOST_TEST_CONTEXT(n << " nodes")
        {
            cluster nodes(n);
            redis_node observer;
            const auto dir = make_temp_dir("redlock-rw-");
            const auto log = dir + "/log";
            const auto waiter_log = dir + "/waiter";
            const auto gate = dir + "/go";
            const auto record = [&](const std::string& what) {
                return redis_cli_path() + " -p " + std::to_string(observer.port()) + " RPUSH order " + what +
                       " > /dev/null";
            };
            const auto holder = spawn_exec(
                nodes, false,
                record("W1") + "; i=0; while [ ! -e " + gate + " ] && [ $i -lt 1500 ]; do sleep 0.02; i=$((i+1)); done",
                log, {"--ttl", "30s"});
            BOOST_REQUIRE(wait_until([&] { return observer.cli({"LLEN", "order"}) == "1"; }, 10'000ms));
            // The holder may have been granted by a quorum before its last node connected: the waiter would take that
            // node, and the split would end at the holder's TTL, whatever woke it.
            BOOST_REQUIRE(wait_until(
                [&] {
                    for (std::size_t i = 0; i < n; ++i)
                        if (nodes[i].cli({"EXISTS", key}) != "1") return false;
                    return true;
                },
                10'000ms));
            const auto waiter = spawn_exec(nodes, false, record("W2"), waiter_log, {"-v", "--ttl", "30s"});
            BOOST_TEST(writer_marked(nodes), "the plain waiter left no writer's mark: " << file_contents(waiter_log));
            auto tried = run_command({REDLOCK_CLI_PATH, "exec", "--nodes", comma_joined(nodes.urls()), "--key", key,
                                      "--shared", "--wait", "0", "--", "true"},
                                     20'000ms);
            BOOST_TEST(tried.exit_code == 75, tried.err);
            BOOST_TEST(observer.cli({"LLEN", "order"}) == "1", "the waiter did not wait");
            std::ofstream(gate).put('\n');
            const auto opened = std::chrono::steady_clock::now();
            BOOST_TEST(wait_until(
                           [&] {
                               return observer.cli({"LLEN", "order"}) == "2";
                           },
                           10'000ms),
                       "the waiter slept through the release: " << file_contents(waiter_log));
            BOOST_TEST_MESSAGE(
                n << " node(s): the waiter ran "
                  << std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - opened)
                         .count()
                  << " ms after the holder's command ended");
            for (auto pid : {holder, waiter}) {
                int status = 0;
                BOOST_REQUIRE(wait_for_exit(pid, 30'000ms, &status));
                BOOST_TEST(exit_status(status) == 0, file_contents(log) << file_contents(waiter_log));
            }
            const auto said = file_contents(waiter_log);
            BOOST_TEST(said.find(" 0 woken by a release") == std::string::npos, said);
            BOOST_TEST(words(observer.cli({"LRANGE", "order", "0", "-1"})) == (std::vector<std::string>{"W1", "W2"}),
                       boost::test_tools::per_element());
            for (std::size_t i = 0; i < n; ++i)
                BOOST_TEST(nodes[i].cli({"EXISTS", "{rw}:writers"}) == "0", "node " << i << " kept a writer's mark");
            std::filesystem::remove_all(dir);
        }
    }
}

// While a plain exec runs, the key holds its token (a plain lock's layout); while --shared ones run, it holds the
// readers' marker and each one's token is in the readers' set.
BOOST_AUTO_TEST_CASE(what_each_side_keeps_on_the_nodes_while_it_holds)
{
    cluster nodes(1);
    const auto cli = redis_cli_path() + " -p " + std::to_string(nodes[0].port());
    auto writer = run_command({REDLOCK_CLI_PATH, "exec", "--nodes", comma_joined(nodes.urls()), "--key", key, "--",
                               "sh", "-c", "echo $REDLOCK_TOKEN; " + cli + " GET " + key},
                              20'000ms);
    BOOST_REQUIRE_MESSAGE(writer.exit_code == 0, writer.err);
    const auto w = words(writer.out);
    BOOST_REQUIRE(w.size() == 2u);
    BOOST_TEST(w[0] == w[1]);
    auto reader = run_command(
        {REDLOCK_CLI_PATH, "exec", "--nodes", comma_joined(nodes.urls()), "--key", key, "--shared", "--", "sh", "-c",
         "echo $REDLOCK_TOKEN; " + cli + " GET " + key + "; " + cli +
             " ZSCORE '{rw}:readers' $REDLOCK_TOKEN | cut -c1-1"},
        20'000ms);
    BOOST_REQUIRE_MESSAGE(reader.exit_code == 0, reader.err);
    const auto r = words(reader.out);
    BOOST_REQUIRE(r.size() == 3u);
    BOOST_TEST(r[1] == "(readers)");
    BOOST_TEST(r[2] == "1");  // a score: the server time the reader's lease ends, in ms
    BOOST_TEST(nodes[0].cli({"EXISTS", key}) == "0");
}
