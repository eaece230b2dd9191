// `redlock exec --limit N` when nodes fail while the command runs: a permit's quorum grows with the limit
// (Q = floor(N * L / (L + 1)) + 1), so the same node failure a lock survives can stop a semaphore's command.
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <common/processes/subprocess.hpp>
#include <common/run_coro.hpp>
#include <common/servers/redis_node.hpp>
#include <csignal>
#include <filesystem>
#include <string>
#include <vector>

using namespace std::chrono_literals;
using namespace redlock::test;

namespace {

// A `redlock exec` process whose output lands in a temp file; stopped (and reaped) at the end of the test.
class cli_process {
public:
    explicit cli_process(std::vector<std::string> args) : dir_(make_temp_dir("redlock-sem-fault-"))
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

// `redlock exec --limit limit` on `nodes`, running a command that says it started, then sleeps 2 s and exits 5.
std::vector<std::string> exec_args(const cluster& nodes, int limit)
{
    return {"exec",
            "--nodes",
            comma_joined(nodes.urls()),
            "--key",
            "pool",
            "--limit",
            std::to_string(limit),
            "--ttl",
            "1s",
            "--kill-grace",
            "300ms",
            "--",
            "sh",
            "-c",
            "echo started; sleep 2; exit 5"};
}

}  // namespace

BOOST_AUTO_TEST_SUITE(cli_semaphore_fault)

// 3 nodes, limit 2: a permit needs all 3. One node killed: the watchdog cannot extend the permit on a quorum,
// and the command is stopped before the permit can end (exit 70), as a lock's would be with its quorum gone.
BOOST_AUTO_TEST_CASE(with_limit_at_least_n_minus_1_one_node_down_stops_the_command)
{
    cluster nodes(3);
    cli_process p(exec_args(nodes, 2));
    BOOST_REQUIRE(wait_until([&] { return p.output().find("started") != std::string::npos; }, 10s));
    nodes[1].kill();
    const int code = p.wait(10s);
    BOOST_TEST(code == 70, "output: " << p.output());
    BOOST_TEST(p.output().find("could not extend the lease on 'pool'") != std::string::npos, "output: " << p.output());
}

// 5 nodes, limit 2: a permit needs 4, so one node down is tolerated and the command finishes with its own code.
BOOST_AUTO_TEST_CASE(a_failure_within_the_tolerance_does_not_disturb_the_command)
{
    cluster nodes(5);
    cli_process p(exec_args(nodes, 2));
    BOOST_REQUIRE(wait_until([&] { return p.output().find("started") != std::string::npos; }, 10s));
    nodes[4].kill();
    const int code = p.wait(10s);
    BOOST_TEST(code == 5, "output: " << p.output());
}

BOOST_AUTO_TEST_SUITE_END()
