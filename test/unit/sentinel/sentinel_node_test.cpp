// The Sentinel node against scripted Sentinels: what a real deployment shows only by chance, made to happen every
// time. An execution context destroyed while the node keeps a handler that owns the node (a request, a connect or a
// subscribe waiting for a master) frees them all; the asan preset's leak check also sees the +switch-master watch. A
// retried request that hangs ends at its deadline.
#include "sentinel/sentinel_node.hpp"

#include <redlock/redlock.hpp>

#include <boost/asio/io_context.hpp>
#include <boost/test/unit_test.hpp>

#include <atomic>
#include <chrono>
#include <common/fakes/scripted_server.hpp>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace asio = boost::asio;
using namespace std::chrono_literals;
using redlock::error_code;
using redlock::request;
using redlock::response;
using redlock::test::scripted_server;
using steady = std::chrono::steady_clock;

namespace {

const std::string hello = "%3\r\n+server\r\n+redis\r\n+version\r\n$5\r\n7.2.4\r\n+proto\r\n:3\r\n";

std::string subscribed_reply(const std::string& channel)
{
    return ">3\r\n$9\r\nsubscribe\r\n$" + std::to_string(channel.size()) + "\r\n" + channel + "\r\n:1\r\n";
}

redlock::node_config fast_config(std::uint16_t sentinel_port)
{
    auto c = redlock::parse_url("redis+sentinel://127.0.0.1:" + std::to_string(sentinel_port) + "/locks");
    c.reconnect_min_delay = 5ms;
    c.reconnect_max_delay = 50ms;
    c.connect_timeout = 1000ms;
    c.request_timeout = 1000ms;
    c.track_keys = false;  // the scripted servers answer no CLIENT TRACKING
    return c;
}

// What a call keeps alive: the node, and what its handler owns besides.
struct call {
    std::shared_ptr<redlock::node> node;
    request req;
    response resp;
    redlock::diagnostics diag;
};

// Makes a node on a context of its own, lets `start` give it a handler that owns the node, runs the context a while
// (until `ready`, if given) and destroys it; whether what the handler owned was freed.
bool freed_with_the_context(std::uint16_t sentinel_port,
                            const std::function<void(call&, std::function<void(error_code)>)>& start,
                            const std::function<bool()>& ready = {})
{
    std::weak_ptr<int> owned;
    {
        asio::io_context io;
        auto c = std::make_shared<call>();
        c->node = redlock::make_node(io.get_executor(), fast_config(sentinel_port));
        auto alive = std::make_shared<int>();
        owned = alive;
        start(*c, [c, alive](error_code) {});
        io.run_for(200ms);
        if (ready) {
            const auto limit = steady::now() + 5s;
            while (!ready() && steady::now() < limit) io.run_for(20ms);
            BOOST_TEST_REQUIRE(ready());
            io.run_for(100ms);  // the reply read, the waiting that follows it begun
        }
        BOOST_TEST_REQUIRE(!owned.expired());
    }
    return owned.expired();
}

void exec_k(call& c, std::function<void(error_code)> handler)
{
    c.req.push("GET", "k");
    c.req.set_timeout(10s);
    c.node->async_exec(c.req, c.resp, "k", std::move(handler));
}

}  // namespace

BOOST_AUTO_TEST_CASE(destroying_the_context_frees_a_waiting_request_whose_handler_owns_the_node)
{
    scripted_server silent([](std::string_view) { return std::string(); });  // accepts, never answers
    BOOST_TEST(freed_with_the_context(silent.port(), exec_k));
}

BOOST_AUTO_TEST_CASE(destroying_the_context_frees_a_waiting_connect_whose_handler_owns_the_node)
{
    scripted_server silent([](std::string_view) { return std::string(); });
    BOOST_TEST(freed_with_the_context(silent.port(), [](call& c, std::function<void(error_code)> handler) {
        c.node->async_connect(c.diag, std::move(handler));
    }));
}

BOOST_AUTO_TEST_CASE(destroying_the_context_frees_a_subscribe_waiting_for_a_master_whose_handler_owns_the_node)
{
    scripted_server silent([](std::string_view) { return std::string(); });
    BOOST_TEST(freed_with_the_context(silent.port(), [](call& c, std::function<void(error_code)> handler) {
        c.node->async_subscribe({"ch"}, c.diag, std::move(handler));
    }));
}

BOOST_AUTO_TEST_CASE(destroying_the_context_frees_a_node_whose_switch_master_watch_is_subscribed)
{
    // A Sentinel that takes the watch's SUBSCRIBE but never says where the master is: the request waits, the watch
    // is subscribed when the context goes.
    std::atomic<int> subscribed{0};
    scripted_server sentinel([&](std::string_view bytes) -> std::string {
        const auto cmd = scripted_server::arguments(bytes);
        if (cmd.empty()) return "-ERR empty\r\n";
        if (cmd[0] == "HELLO") return hello;
        if (cmd[0] == "PING") return "+PONG\r\n";
        if (cmd[0] == "SUBSCRIBE" && cmd.size() == 2) {
            ++subscribed;
            return subscribed_reply(cmd[1]);
        }
        return std::string();
    });
    BOOST_TEST(freed_with_the_context(sentinel.port(), exec_k, [&] { return subscribed.load() > 0; }));
}

BOOST_AUTO_TEST_CASE(a_retried_request_the_master_never_answers_ends_at_its_deadline)
{
    // The master refuses the first GET with READONLY (the node leaves it, asks again, is sent back to it: ROLE says
    // master) and never answers the retry: the retry carries the time left, not a whole request timeout.
    std::atomic<int> gets{0};
    scripted_server master([&](std::string_view bytes) -> std::string {
        const auto cmd = scripted_server::arguments(bytes);
        if (cmd.empty()) return "-ERR empty\r\n";
        if (cmd[0] == "HELLO") return hello;
        if (cmd[0] == "PING") return "+PONG\r\n";
        if (cmd[0] == "ROLE") return "*3\r\n$6\r\nmaster\r\n:0\r\n*0\r\n";
        if (cmd[0] == "GET" && gets++ == 0) return "-READONLY You can't write against a read only replica.\r\n";
        return std::string();
    });
    const auto master_port = std::to_string(master.port());
    scripted_server sentinel([&](std::string_view bytes) -> std::string {
        const auto cmd = scripted_server::arguments(bytes);
        if (cmd.empty()) return "-ERR empty\r\n";
        if (cmd[0] == "HELLO") return hello;
        if (cmd[0] == "PING") return "+PONG\r\n";
        if (cmd[0] == "SUBSCRIBE" && cmd.size() == 2) return subscribed_reply(cmd[1]);
        if (cmd[0] == "SENTINEL" && cmd.size() == 3 && cmd[1] == "GET-MASTER-ADDR-BY-NAME")
            return "*2\r\n$9\r\n127.0.0.1\r\n$" + std::to_string(master_port.size()) + "\r\n" + master_port + "\r\n";
        if (cmd[0] == "SENTINEL" && cmd.size() == 3 && cmd[1] == "SENTINELS") return "*0\r\n";
        return "-ERR unknown command '" + cmd[0] + "'\r\n";
    });
    asio::io_context io;
    auto config = fast_config(sentinel.port());
    config.request_timeout = 5s;
    auto node = redlock::make_node(io.get_executor(), config);
    request req;
    req.push("GET", "k");
    req.set_timeout(500ms);
    response resp;
    std::optional<error_code> result;
    const auto start = steady::now();
    node->async_exec(req, resp, "k", [&](error_code ec) { result = ec; });
    const auto limit = start + 5s;
    while (!result && steady::now() < limit) io.run_for(10ms);
    const auto took = steady::now() - start;
    BOOST_TEST_REQUIRE(result.has_value());
    BOOST_TEST(*result == redlock::error::timeout);
    BOOST_TEST(gets.load() == 2);
    BOOST_TEST(took < 1500ms);
    node->close();
    io.run_for(100ms);
}
