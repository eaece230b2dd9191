// The CLI's node list (src/cli/common/nodes.cpp): --nodes (repeatable), else $REDLOCK_NODES, else the default node;
// parse_node_list's syntax; a node listed twice refused; the client name that finds redlock in CLIENT LIST.
#include "cli/common/command_line.hpp"
#include "cli/common/nodes.hpp"

#include <boost/test/unit_test.hpp>

#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

using redlock::cli::node_list;
using redlock::cli::usage_error;

namespace {

// $REDLOCK_NODES set (or unset: nullptr) for one test, restored after it.
class environment {
public:
    explicit environment(const char* value)
    {
        if (const char* old = std::getenv("REDLOCK_NODES")) saved_ = old;
        if (value)
            ::setenv("REDLOCK_NODES", value, 1);
        else
            ::unsetenv("REDLOCK_NODES");
    }
    ~environment()
    {
        if (saved_)
            ::setenv("REDLOCK_NODES", saved_->c_str(), 1);
        else
            ::unsetenv("REDLOCK_NODES");
    }

private:
    std::optional<std::string> saved_;
};

std::vector<std::string> urls(const std::vector<redlock::node_config>& nodes)
{
    std::vector<std::string> out;
    for (const auto& n : nodes) out.push_back(n.to_string());
    return out;
}

std::string refusal(const std::vector<std::string>& flags)
{
    try {
        node_list(flags, "exec");
    } catch (const usage_error& e) {
        BOOST_TEST(e.command() == "exec");
        return e.what();
    }
    BOOST_ERROR("accepted");
    return {};
}

}  // namespace

BOOST_AUTO_TEST_CASE(the_flag_comes_first_then_the_environment_then_the_default)
{
    const environment env("redis://e:1, redis://e:2");
    BOOST_TEST(urls(node_list({"redis://a:1,redis://b:2", "redis://c:3"}, "exec")) ==
                   (std::vector<std::string>{"redis://a:1", "redis://b:2", "redis://c:3"}),
               boost::test_tools::per_element());
    BOOST_TEST(urls(node_list({}, "exec")) == (std::vector<std::string>{"redis://e:1", "redis://e:2"}),
               boost::test_tools::per_element());
    const environment empty("");  // counts as unset
    const auto fallback = node_list({}, "exec");
    BOOST_TEST(urls(fallback) == std::vector<std::string>{"redis://127.0.0.1:6379"}, boost::test_tools::per_element());
    BOOST_TEST(fallback.front().client_name == "redlock-cli");
}

BOOST_AUTO_TEST_CASE(bad_lists_are_usage_errors)
{
    const environment env(nullptr);
    BOOST_TEST(refusal({"redis://a:1,http://b:2"}) ==
               "bad node URL in --nodes: node 2 of 2: invalid node URL 'http://b:2': unknown scheme 'http' (expected "
               "redis, rediss, unix, redis+cluster, rediss+cluster, redis+sentinel or rediss+sentinel)");
    BOOST_TEST(refusal({" , "}) == "--nodes is empty: give at least one node URL");
    BOOST_TEST(refusal({"redis://A:7", "redis://a:7"}).find("is listed twice in --nodes") != std::string::npos);
    const environment blank(" ,");
    BOOST_TEST(refusal({}) == "$REDLOCK_NODES holds no node URL");
}
