// Self-tests of the process faults the harness injects into real redis-servers.
#include <boost/asio/error.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/test/unit_test.hpp>

#include <cerrno>
#include <chrono>
#include <common/run_coro.hpp>
#include <common/servers/raw_client.hpp>
#include <common/servers/redis_node.hpp>
#include <filesystem>
#include <signal.h>
#include <string>

namespace asio = boost::asio;
using namespace std::chrono_literals;
using namespace redlock::test;

BOOST_AUTO_TEST_CASE(a_paused_node_accepts_but_answers_only_after_resume)
{
    redis_node node;
    node.pause();
    raw_client client(node.port(), 1s);  // the kernel still completes the handshake
    client.write("SET late 1 PX 60000\r\n");
    boost::system::error_code ec;
    BOOST_TEST(client.read_until("\r\n", 300ms, ec).empty());
    BOOST_TEST((ec == asio::error::timed_out));

    node.resume();
    // The command sat in the socket buffer and runs now.
    BOOST_TEST(client.read_until("\r\n", 2s, ec) == "+OK\r\n");
    BOOST_TEST(!ec.failed());
    BOOST_TEST(node.cli({"EXISTS", "late"}) == "1");
}

BOOST_AUTO_TEST_CASE(cli_on_a_paused_node_fails_after_its_timeout)
{
    redis_node node;
    node.pause();
    auto start = std::chrono::steady_clock::now();
    BOOST_CHECK_THROW(node.cli({"PING"}), std::runtime_error);
    BOOST_TEST((std::chrono::steady_clock::now() - start >= 4s));
    node.resume();
    BOOST_TEST(node.cli({"PING"}) == "PONG");
}

BOOST_AUTO_TEST_CASE(a_killed_node_refuses_connects)
{
    redis_node node;
    raw_client open(node.port());
    BOOST_TEST(open.command("PING\r\n") == "+PONG\r\n");  // accepted, not just in the backlog
    node.kill();
    BOOST_TEST(!node.running());
    BOOST_TEST(node.pid() == -1);
    BOOST_TEST((raw_client::try_connect(node.port()) == asio::error::connection_refused));
    boost::system::error_code ec;
    open.read_until("\r\n", 2s, ec);
    BOOST_TEST_MESSAGE("open connection after kill: " << ec.message());
    BOOST_TEST((ec == asio::error::eof));
    BOOST_CHECK_THROW(node.cli({"PING"}), std::runtime_error);
}

BOOST_AUTO_TEST_CASE(a_node_that_dies_by_itself_is_not_running)
{
    redis_node node;
    auto pid = node.pid();
    ::kill(pid, SIGKILL);
    BOOST_TEST(wait_until([&] { return !node.running(); }, 2s));
    node.restart();
    BOOST_TEST(node.running());
    BOOST_TEST(node.cli({"PING"}) == "PONG");
}

BOOST_AUTO_TEST_CASE(the_destructor_cleans_up_a_paused_node)
{
    pid_t pid = -1;
    std::string dir;
    auto start = std::chrono::steady_clock::now();
    {
        redis_node node;
        pid = node.pid();
        dir = node.dir();
        node.pause();
    }
    BOOST_TEST_MESSAGE(
        "destroying a paused node took "
        << std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start).count()
        << " ms (start included)");
    errno = 0;
    BOOST_TEST(::kill(pid, 0) == -1);
    BOOST_TEST(errno == ESRCH);
    BOOST_TEST(!std::filesystem::exists(dir));
}

BOOST_AUTO_TEST_CASE(a_cluster_node_can_be_paused_while_the_others_answer)
{
    cluster nodes(3);
    nodes[1].pause();
    BOOST_TEST(nodes[0].cli({"PING"}) == "PONG");
    BOOST_TEST(nodes[2].cli({"PING"}) == "PONG");
    nodes[1].resume();
    BOOST_TEST(nodes[1].cli({"PING"}) == "PONG");
}

BOOST_AUTO_TEST_CASE(restart_on_a_taken_port_fails_with_the_log_then_works_once_free)
{
    redis_node node;
    auto port = node.port();
    node.kill();
    {
        // Someone else listens on the port now: restart retries for a while, then reports why.
        asio::io_context ctx;
        asio::ip::tcp::acceptor squatter(ctx, asio::ip::tcp::endpoint(asio::ip::address_v4::loopback(), port));
        auto start = std::chrono::steady_clock::now();
        try {
            node.restart();
            BOOST_FAIL("restart should fail while the port is taken");
        } catch (const std::runtime_error& e) {
            BOOST_TEST(std::string(e.what()).find("Address already in use") != std::string::npos);
        }
        BOOST_TEST_MESSAGE(
            "restart gave up after "
            << std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start).count()
            << " ms");
        BOOST_TEST(!node.running());
    }
    node.restart();
    BOOST_TEST(node.port() == port);
    BOOST_TEST(node.cli({"PING"}) == "PONG");
}
