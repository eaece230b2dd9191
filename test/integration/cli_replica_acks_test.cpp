// `redlock exec --replica-acks N` against a master with a replica: the command runs once the replica has the lock
// (or the permit); too few replicas exit 69 without running it; the flags' usage errors exit 64.
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <common/processes/subprocess.hpp>
#include <common/servers/replicated_node.hpp>
#include <sstream>
#include <string>
#include <vector>

using namespace std::chrono_literals;
using namespace redlock::test;

namespace {

command_result redlock_cli(std::vector<std::string> args)
{
    args.insert(args.begin(), REDLOCK_CLI_PATH);
    return run_command(args, 20'000ms);
}

std::vector<std::string> lines(const std::string& text)
{
    std::vector<std::string> out;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) out.push_back(line);
    return out;
}

}  // namespace

// The command reads the lock key on the replica, as it runs: the grant was acknowledged before it started.
BOOST_AUTO_TEST_CASE(exec_runs_the_command_once_the_replica_has_the_lock)
{
    replicated_node nodes;
    const auto replica_get = cli_program() + " -p " + std::to_string(nodes.replica().port()) + " GET acks:job";
    auto r = redlock_cli({"exec", "--nodes", nodes.master.url(), "--key", "acks:job", "--replica-acks", "1",
                          "--replica-ack-timeout", "1s", "--", "sh", "-c", replica_get + "; echo $REDLOCK_TOKEN"});
    BOOST_TEST(r.exit_code == 0, r.err);
    const auto out = lines(r.out);
    BOOST_REQUIRE(out.size() == 2u);
    BOOST_TEST(out[0] == out[1]);  // the replica holds the token the command was given
    BOOST_TEST(out[0].size() == 32u);
    BOOST_TEST(nodes.master.cli({"EXISTS", "acks:job"}) == "0");  // released after the command
}

BOOST_AUTO_TEST_CASE(exec_takes_a_permit_the_replica_has)
{
    replicated_node nodes;
    const auto replica_score =
        cli_program() + " -p " + std::to_string(nodes.replica().port()) + " ZSCORE acks:pool $REDLOCK_PERMIT_ID";
    auto r = redlock_cli({"exec", "--nodes", nodes.master.url(), "--key", "acks:pool", "--limit", "3", "--replica-acks",
                          "1", "--replica-ack-timeout", "1s", "--", "sh", "-c", replica_score});
    BOOST_TEST(r.exit_code == 0, r.err);
    BOOST_TEST(!lines(r.out).empty());
    BOOST_TEST(!r.out.empty());  // the permit's expiry, as the replica stores it
}

BOOST_AUTO_TEST_CASE(exec_exits_69_without_running_the_command_when_too_few_replicas_acknowledge)
{
    replicated_node nodes;
    const auto start = std::chrono::steady_clock::now();
    auto r = redlock_cli({"exec", "--nodes", nodes.master.url(), "--key", "acks:job", "--replica-acks", "2",
                          "--replica-ack-timeout", "100ms", "--wait", "0", "--", "echo", "ran"});
    BOOST_TEST(r.exit_code == 69, r.err);
    BOOST_TEST(r.out.find("ran") == std::string::npos);
    BOOST_TEST(r.err.find("not acknowledged by 2 replica(s) within 100 ms") != std::string::npos, r.err);
    BOOST_TEST((std::chrono::steady_clock::now() - start < 5s));
    BOOST_TEST(nodes.master.cli({"EXISTS", "acks:job"}) == "0");  // the grant was released
}

BOOST_AUTO_TEST_CASE(replica_ack_flags_are_checked_before_any_io)
{
    const std::string nowhere = "redis://127.0.0.1:1";
    auto bad_count = redlock_cli({"exec", "--nodes", nowhere, "--key", "k", "--replica-acks", "x", "--", "true"});
    BOOST_TEST(bad_count.exit_code == 64);
    BOOST_TEST(bad_count.err.find("--replica-acks: 'x' is not a whole number from 0 up") != std::string::npos,
               bad_count.err);
    auto alone = redlock_cli({"exec", "--nodes", nowhere, "--key", "k", "--replica-ack-timeout", "1s", "--", "true"});
    BOOST_TEST(alone.exit_code == 64);
    BOOST_TEST(alone.err.find("--replica-ack-timeout goes with --replica-acks") != std::string::npos, alone.err);
    // Longer than the validity allows: the library's own check, reported as a usage error.
    auto too_long = redlock_cli({"exec", "--nodes", nowhere, "--key", "k", "--ttl", "100ms", "--replica-acks", "1",
                                 "--replica-ack-timeout", "200ms", "--wait", "0", "--", "true"});
    BOOST_TEST(too_long.exit_code == 64);
    BOOST_TEST(too_long.err.find("replica_ack_timeout") != std::string::npos, too_long.err);
}
