// `redlock exec`'s command line (src/cli/exec/options.cpp), read without I/O: the defaults, the command after "--",
// and a few refusals (the integration tests run the rest through the executable).
#include "cli/exec/options.hpp"

#include <boost/test/unit_test.hpp>

#include <csignal>
#include <string>
#include <vector>

using redlock::cli::parse_exec;
using redlock::cli::usage_error;

BOOST_AUTO_TEST_CASE(defaults_and_the_command_after_the_double_dash)
{
    const auto o = parse_exec({"--nodes", "redis://a:1", "--key", "job", "--", "sh", "-c", "exit 3", "--key"});
    BOOST_TEST_REQUIRE(o.has_value());
    BOOST_TEST(o->key == "job");
    BOOST_TEST(o->ttl.count() == 10'000);
    BOOST_TEST(!o->wait.has_value());
    BOOST_TEST(o->limit == 1);
    BOOST_TEST(!o->shared);
    BOOST_TEST(o->kill_signal == SIGTERM);
    BOOST_TEST(o->command == (std::vector<std::string>{"sh", "-c", "exit 3", "--key"}),
               boost::test_tools::per_element());
    BOOST_TEST(o->nodes.size() == 1u);
}

BOOST_AUTO_TEST_CASE(refusals_name_the_flag)
{
    auto says = [](std::vector<std::string> args) -> std::string {
        try {
            parse_exec(args);
        } catch (const usage_error& e) {
            BOOST_TEST(e.command() == "exec");
            return e.what();
        }
        return "accepted";
    };
    BOOST_TEST(says({"--key", "k", "--ttl", "5ms", "--", "true"}) == "--ttl must be at least 10ms");
    BOOST_TEST(
        says({"--key", "k", "--limit", "2", "--fencing", "--", "true"}).starts_with("--fencing goes with a lock"));
    BOOST_TEST(says({"--key", "k", "true"}).starts_with("unexpected argument 'true': put the command after '--'"));
    BOOST_TEST(says({"--key", "k", "--", ""}) == "the command name is empty");
    BOOST_TEST(says({"--key", "k", "--shared", "--limit", "2", "--", "true"}).starts_with("--shared is a lock's read"));
    BOOST_TEST(says({"--key", "k", "--shared", "--waiter-ttl", "1s", "--", "true"}).starts_with("--waiter-ttl"));
}

BOOST_AUTO_TEST_CASE(shared_takes_the_read_side_and_a_writer_may_set_its_waiter_ttl)
{
    const auto reader = parse_exec({"--key", "k", "--shared", "--", "true"});
    BOOST_TEST_REQUIRE(reader.has_value());
    BOOST_TEST(reader->shared);
    const auto writer = parse_exec({"--key", "k", "--waiter-ttl", "500ms", "--", "true"});
    BOOST_TEST_REQUIRE(writer.has_value());
    BOOST_TEST(!writer->shared);
    BOOST_TEST(writer->waiter_ttl.count() == 500);
}

// A waiting writer heartbeats with each attempt: requests that wait a second for replicas stretch the default
// waiter TTL to four request deadlines (the library refuses one below three), and a TTL given stands.
BOOST_AUTO_TEST_CASE(replica_acks_stretch_the_default_waiter_ttl)
{
    const auto stretched =
        parse_exec({"--key", "k", "--replica-acks", "1", "--replica-ack-timeout", "1s", "--", "true"});
    BOOST_TEST_REQUIRE(stretched.has_value());
    BOOST_TEST(stretched->waiter_ttl.count() == 4 * (50 + 1000));
    const auto given = parse_exec(
        {"--key", "k", "--replica-acks", "1", "--replica-ack-timeout", "1s", "--waiter-ttl", "9s", "--", "true"});
    BOOST_TEST_REQUIRE(given.has_value());
    BOOST_TEST(given->waiter_ttl.count() == 9000);
    const auto plain = parse_exec({"--key", "k", "--", "true"});
    BOOST_TEST_REQUIRE(plain.has_value());
    BOOST_TEST(plain->waiter_ttl.count() == 2000);
}
