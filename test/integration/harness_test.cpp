// Self-tests of the test harness: real redis-servers, the fault proxy, the scripted server, the clock shim.
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/connect.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/test/unit_test.hpp>

#include <atomic>
#include <chrono>
#include <common/fakes/scripted_server.hpp>
#include <common/run_coro.hpp>
#include <common/servers/fault_proxy.hpp>
#include <common/servers/raw_client.hpp>
#include <common/servers/redis_node.hpp>
#include <common/servers/tls_files.hpp>
#include <filesystem>
#include <set>
#include <string>

namespace asio = boost::asio;
using asio::ip::tcp;
using namespace std::chrono_literals;
using namespace redlock::test;
using std::chrono::steady_clock;

namespace {

long long elapsed_ms(steady_clock::time_point since)
{
    return std::chrono::duration_cast<std::chrono::milliseconds>(steady_clock::now() - since).count();
}

// PING over TLS, verifying the server against `ca_file` and the name 127.0.0.1.
asio::awaitable<void> tls_ping(std::uint16_t port, std::string ca_file, std::string& reply)
{
    auto executor = co_await asio::this_coro::executor;
    asio::ssl::context tls(asio::ssl::context::tls_client);
    tls.load_verify_file(ca_file);
    asio::ssl::stream<tcp::socket> stream(executor, tls);
    stream.set_verify_mode(asio::ssl::verify_peer);
    stream.set_verify_callback(asio::ssl::host_name_verification("127.0.0.1"));
    co_await stream.next_layer().async_connect(tcp::endpoint(asio::ip::address_v4::loopback(), port),
                                               asio::use_awaitable);
    co_await stream.async_handshake(asio::ssl::stream_base::client, asio::use_awaitable);
    co_await asio::async_write(stream, asio::buffer(std::string_view("PING\r\n")), asio::use_awaitable);
    co_await asio::async_read_until(stream, asio::dynamic_buffer(reply), "\r\n", asio::use_awaitable);
}

asio::awaitable<void> unix_ping(std::string path, std::string& reply)
{
    asio::local::stream_protocol::socket socket(co_await asio::this_coro::executor);
    co_await socket.async_connect(asio::local::stream_protocol::endpoint(path), asio::use_awaitable);
    co_await asio::async_write(socket, asio::buffer(std::string_view("PING\r\n")), asio::use_awaitable);
    co_await asio::async_read_until(socket, asio::dynamic_buffer(reply), "\r\n", asio::use_awaitable);
}

// The node's TIME in milliseconds since the epoch.
long long node_time_ms(const redis_node& node)
{
    auto reply = node.cli({"TIME"});  // "<seconds>\n<microseconds>"
    auto nl = reply.find('\n');
    return std::stoll(reply.substr(0, nl)) * 1000 + std::stoll(reply.substr(nl + 1)) / 1000;
}

long long system_time_ms()
{
    return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
        .count();
}

}  // namespace

BOOST_AUTO_TEST_SUITE(redis_nodes)

BOOST_AUTO_TEST_CASE(node_starts_and_answers_through_cli)
{
    auto start = steady_clock::now();
    redis_node node;
    BOOST_TEST_MESSAGE("one node ready in " << elapsed_ms(start) << " ms on port " << node.port());
    BOOST_TEST(node.running());
    BOOST_TEST(node.pid() > 0);
    BOOST_TEST(node.url() == "redis://127.0.0.1:" + std::to_string(node.port()));
    BOOST_TEST(node.cli({"PING"}) == "PONG");
    BOOST_TEST(node.cli({"SET", "k", "v"}) == "OK");
    BOOST_TEST(node.cli({"GET", "k"}) == "v");
    BOOST_TEST(node.cli({"CONFIG", "GET", "save"}) == "save");  // the value is empty: no RDB snapshots
    BOOST_TEST(node.cli({"DEBUG", "SLEEP", "0"}) == "OK");      // debug commands are enabled
    BOOST_TEST(node.cli({"NO-SUCH-COMMAND"}).starts_with("ERR unknown command"));
    BOOST_TEST(node.log_tail(5).find("Ready to accept connections") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(five_node_cluster_starts_on_distinct_ports)
{
    auto start = steady_clock::now();
    cluster nodes(5);
    BOOST_TEST_MESSAGE("five nodes ready in " << elapsed_ms(start) << " ms");
    BOOST_TEST(nodes.size() == 5u);
    std::set<std::uint16_t> ports;
    for (std::size_t i = 0; i < nodes.size(); ++i) {
        ports.insert(nodes[i].port());
        BOOST_TEST(nodes[i].cli({"PING"}) == "PONG");
    }
    BOOST_TEST(ports.size() == 5u);
    BOOST_TEST(nodes.urls().at(2) == nodes[2].url());
}

BOOST_AUTO_TEST_CASE(restart_keeps_the_port_and_loses_data_without_persistence)
{
    redis_node node;
    auto port = node.port();
    BOOST_TEST(node.cli({"SET", "lock", "a", "PX", "30000"}) == "OK");
    auto old_pid = node.pid();
    auto start = steady_clock::now();
    node.restart();
    BOOST_TEST_MESSAGE("restart took " << elapsed_ms(start) << " ms");
    BOOST_TEST(node.port() == port);
    BOOST_TEST(node.pid() != old_pid);
    BOOST_TEST(node.cli({"EXISTS", "lock"}) == "0");
    BOOST_TEST(node.cli({"SET", "lock", "b", "NX", "PX", "30000"}) == "OK");  // a second owner: the hazard
}

BOOST_AUTO_TEST_CASE(persistence_keeps_data_across_kill_and_restart)
{
    node_options options;
    options.persistence = true;
    redis_node node(options);
    BOOST_TEST(node.cli({"SET", "fence", "42"}) == "OK");
    BOOST_TEST(node.cli({"SET", "lock", "a", "PX", "60000"}) == "OK");
    node.kill();
    BOOST_TEST(!node.running());
    node.restart();
    BOOST_TEST(node.cli({"GET", "fence"}) == "42");
    BOOST_TEST(node.cli({"GET", "lock"}) == "a");
}

BOOST_AUTO_TEST_CASE(unix_socket_node_answers_on_its_socket)
{
    node_options options;
    options.unix_socket = true;
    redis_node node(options);
    BOOST_TEST(std::filesystem::exists(node.unix_path()));
    std::string reply;
    run_coro([&] { return unix_ping(node.unix_path(), reply); }, 10s);
    BOOST_TEST(reply == "+PONG\r\n");
}

BOOST_AUTO_TEST_CASE(password_node_requires_auth)
{
    node_options options;
    options.requirepass = "s3cret";
    redis_node node(options);
    BOOST_TEST(node.cli({"PING"}) == "PONG");
    raw_client client(node.port());
    BOOST_TEST(client.command("PING\r\n").starts_with("-NOAUTH"));
    BOOST_TEST(client.command("AUTH s3cret\r\nPING\r\n") == "+OK\r\n");
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(tls)

BOOST_AUTO_TEST_CASE(tls_node_answers_cli_and_a_client_that_trusts_the_ca)
{
    node_options options;
    options.tls = true;
    auto start = steady_clock::now();
    redis_node node(options);
    BOOST_TEST_MESSAGE("TLS node ready in " << elapsed_ms(start) << " ms (certificates included)");
    BOOST_TEST(node.url() == "rediss://127.0.0.1:" + std::to_string(node.port()));
    BOOST_TEST(node.cli({"PING"}) == "PONG");

    std::string reply;
    run_coro([&] { return tls_ping(node.port(), tls_files::get().ca_cert, reply); }, 10s);
    BOOST_TEST(reply == "+PONG\r\n");
}

BOOST_AUTO_TEST_CASE(tls_verification_with_another_ca_fails)
{
    node_options options;
    options.tls = true;
    redis_node node(options);
    std::string reply;
    try {
        run_coro([&] { return tls_ping(node.port(), tls_files::get().other_ca_cert, reply); }, 10s);
        BOOST_FAIL("the handshake should fail");
    } catch (const boost::system::system_error& e) {
        BOOST_TEST_MESSAGE("handshake with the wrong CA: " << e.code().message());
        BOOST_TEST((e.code().category() == asio::error::get_ssl_category()));
    }
    BOOST_TEST(reply.empty());
}

BOOST_AUTO_TEST_CASE(tls_passes_through_the_fault_proxy)
{
    node_options options;
    options.tls = true;
    redis_node node(options);
    fault_proxy proxy(node.port(), true);
    BOOST_TEST(proxy.url() == "rediss://127.0.0.1:" + std::to_string(proxy.port()));
    std::string reply;
    run_coro([&] { return tls_ping(proxy.port(), tls_files::get().ca_cert, reply); }, 10s);
    BOOST_TEST(reply == "+PONG\r\n");
}

BOOST_AUTO_TEST_CASE(plain_tcp_to_a_tls_node_gets_no_pong)
{
    node_options options;
    options.tls = true;
    redis_node node(options);
    raw_client client(node.port());
    client.write("PING\r\n");
    boost::system::error_code ec;
    auto reply = client.read_until("\r\n", 2s, ec);
    BOOST_TEST(reply.empty());
    BOOST_TEST(ec.failed());
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(proxy)

BOOST_AUTO_TEST_CASE(pass_mode_forwards_both_ways)
{
    redis_node node;
    fault_proxy proxy(node.port());
    BOOST_TEST(proxy.url() == "redis://127.0.0.1:" + std::to_string(proxy.port()));
    raw_client client(proxy.port());
    auto start = steady_clock::now();
    BOOST_TEST(client.command("PING\r\n") == "+PONG\r\n");
    BOOST_TEST_MESSAGE("PING through the proxy (pass): " << elapsed_ms(start) << " ms");
    BOOST_TEST(client.command("SET k v\r\n") == "+OK\r\n");
    BOOST_TEST(node.cli({"GET", "k"}) == "v");
    BOOST_TEST(proxy.connections() == 1u);
    BOOST_TEST(proxy.open_connections() == 1u);
}

BOOST_AUTO_TEST_CASE(delay_mode_delays_each_direction)
{
    redis_node node;
    fault_proxy proxy(node.port());
    raw_client client(proxy.port());
    BOOST_TEST(client.command("PING\r\n") == "+PONG\r\n");  // connected before the delay starts

    proxy.set_mode(fault_proxy::mode::delay, 50ms);
    BOOST_TEST((proxy.current_mode() == fault_proxy::mode::delay));
    auto start = steady_clock::now();
    BOOST_TEST(client.command("PING\r\n") == "+PONG\r\n");
    auto rtt = elapsed_ms(start);
    BOOST_TEST_MESSAGE("PING through the proxy with 50 ms delay each way: " << rtt << " ms");
    BOOST_TEST(rtt >= 100);
    BOOST_TEST(rtt < 1000);

    // Two commands written together come back in order.
    start = steady_clock::now();
    client.write("SET a 1\r\nGET a\r\n");
    boost::system::error_code ec;
    BOOST_TEST(client.read_until("\r\n", 2s, ec) == "+OK\r\n");
    BOOST_TEST(client.read_until("\r\n1\r\n", 2s, ec) == "$1\r\n1\r\n");
    BOOST_TEST(elapsed_ms(start) >= 100);

    proxy.set_mode(fault_proxy::mode::pass);
    start = steady_clock::now();
    BOOST_TEST(client.command("PING\r\n") == "+PONG\r\n");
    BOOST_TEST(elapsed_ms(start) < 100);
}

BOOST_AUTO_TEST_CASE(blackhole_mode_never_answers_old_or_new_connections)
{
    redis_node node;
    fault_proxy proxy(node.port());
    raw_client old_client(proxy.port());
    BOOST_TEST(old_client.command("PING\r\n") == "+PONG\r\n");

    proxy.set_mode(fault_proxy::mode::blackhole);
    boost::system::error_code ec;
    old_client.write("SET hole 1\r\n");
    BOOST_TEST(old_client.read_until("\r\n", 300ms, ec).empty());
    BOOST_TEST((ec == asio::error::timed_out));
    BOOST_TEST(node.cli({"EXISTS", "hole"}) == "0");  // the request never reached the node

    raw_client new_client(proxy.port());  // the connect itself succeeds
    new_client.write("PING\r\n");
    BOOST_TEST(new_client.read_until("\r\n", 300ms, ec).empty());
    BOOST_TEST((ec == asio::error::timed_out));

    proxy.set_mode(fault_proxy::mode::pass);
    BOOST_TEST(old_client.command("PING\r\n") == "+PONG\r\n");
}

BOOST_AUTO_TEST_CASE(drop_replies_mode_runs_commands_but_hides_replies)
{
    redis_node node;
    fault_proxy proxy(node.port());
    raw_client client(proxy.port());
    proxy.set_mode(fault_proxy::mode::drop_replies);
    client.write("SET applied yes\r\n");
    boost::system::error_code ec;
    BOOST_TEST(client.read_until("\r\n", 300ms, ec).empty());
    BOOST_TEST((ec == asio::error::timed_out));
    BOOST_TEST(node.cli({"GET", "applied"}) == "yes");
}

BOOST_AUTO_TEST_CASE(reset_mode_resets_current_and_new_connections)
{
    redis_node node;
    fault_proxy proxy(node.port());
    raw_client client(proxy.port());
    BOOST_TEST(client.command("PING\r\n") == "+PONG\r\n");

    proxy.set_mode(fault_proxy::mode::reset);
    boost::system::error_code ec;
    client.read_until("\r\n", 2s, ec);
    BOOST_TEST_MESSAGE("current connection after reset: " << ec.message());
    BOOST_TEST((ec == asio::error::connection_reset));

    // The RST can beat the end of the client's connect, so the connect may fail already.
    try {
        raw_client fresh(proxy.port());
        fresh.read_until("\r\n", 2s, ec);
    } catch (const boost::system::system_error& e) {
        ec = e.code();
    }
    BOOST_TEST_MESSAGE("new connection in reset mode: " << ec.message());
    BOOST_TEST((ec == asio::error::connection_reset));
    BOOST_TEST(proxy.connections() == 2u);
}

BOOST_AUTO_TEST_CASE(reset_all_resets_current_connections_only)
{
    redis_node node;
    fault_proxy proxy(node.port());
    raw_client client(proxy.port());
    BOOST_TEST(client.command("PING\r\n") == "+PONG\r\n");
    proxy.reset_all();
    boost::system::error_code ec;
    client.read_until("\r\n", 2s, ec);
    BOOST_TEST((ec == asio::error::connection_reset));
    raw_client fresh(proxy.port());
    BOOST_TEST(fresh.command("PING\r\n") == "+PONG\r\n");
}

BOOST_AUTO_TEST_CASE(refuse_mode_refuses_connects_until_switched_back)
{
    redis_node node;
    fault_proxy proxy(node.port());
    auto port = proxy.port();
    raw_client open_client(port);
    // Answered, so accepted: a connection still in the listen backlog would be reset by the close.
    BOOST_TEST(open_client.command("PING\r\n") == "+PONG\r\n");
    proxy.set_mode(fault_proxy::mode::refuse);
    BOOST_TEST((raw_client::try_connect(port) == asio::error::connection_refused));
    BOOST_TEST(open_client.command("PING\r\n") == "+PONG\r\n");  // open connections keep working

    proxy.set_mode(fault_proxy::mode::pass);
    BOOST_TEST(proxy.port() == port);
    raw_client client(port);
    BOOST_TEST(client.command("PING\r\n") == "+PONG\r\n");
}

BOOST_AUTO_TEST_CASE(a_dead_upstream_closes_proxied_connections)
{
    redis_node node;
    fault_proxy proxy(node.port());
    raw_client client(proxy.port());
    BOOST_TEST(client.command("PING\r\n") == "+PONG\r\n");
    node.kill();
    boost::system::error_code ec;
    client.read_until("\r\n", 2s, ec);
    BOOST_TEST((ec == asio::error::eof));
    raw_client fresh(proxy.port());
    fresh.read_until("\r\n", 2s, ec);
    BOOST_TEST((ec == asio::error::eof));
}

// A client that closes while the proxy still delays its request: the request reaches the node all the same (as
// over a slow network), then the proxy closes its side.
BOOST_AUTO_TEST_CASE(a_delayed_request_reaches_the_node_after_the_client_closed)
{
    redis_node node;
    fault_proxy proxy(node.port());
    raw_client client(proxy.port());
    BOOST_TEST(client.command("PING\r\n") == "+PONG\r\n");
    proxy.set_mode(fault_proxy::mode::delay, 500ms);
    client.write("SET late 1\r\n");
    client.close();
    BOOST_TEST(node.cli({"EXISTS", "late"}) == "0");  // still delayed
    BOOST_TEST(wait_until([&] { return node.cli({"EXISTS", "late"}) == "1"; }, 3s));
    BOOST_TEST(wait_until([&] { return proxy.open_connections() == 0u; }, 3s));
}

// The other way: the node answers QUIT and closes; the delayed +OK still reaches the client, then the end of
// the stream.
BOOST_AUTO_TEST_CASE(a_delayed_reply_reaches_the_client_after_the_node_closed)
{
    redis_node node;
    fault_proxy proxy(node.port());
    raw_client client(proxy.port());
    BOOST_TEST(client.command("PING\r\n") == "+PONG\r\n");
    proxy.set_mode(fault_proxy::mode::delay, 300ms);
    client.write("QUIT\r\n");
    boost::system::error_code ec;
    BOOST_TEST(client.read_until("\r\n", 3s, ec) == "+OK\r\n", ec.message());
    client.read_until("\r\n", 3s, ec);
    BOOST_TEST((ec == asio::error::eof), ec.message());
    BOOST_TEST(wait_until([&] { return proxy.open_connections() == 0u; }, 3s));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(scripted)

BOOST_AUTO_TEST_CASE(scripted_server_returns_the_scripted_bytes)
{
    std::atomic<int> calls{0};
    scripted_server server([&](std::string_view request) -> std::string {
        ++calls;
        auto args = scripted_server::arguments(request);
        if (args.empty()) return "-ERR garbage\r\n";
        if (args[0] == "HELLO") return "-ERR unknown command 'HELLO'\r\n";
        if (args[0] == "PING") return "+PONG\r\n";
        if (args[0] == "SILENT") return {};
        if (args[0] == "QUIT") return scripted_server::close_connection;
        return "$5\r\nhel";  // a truncated bulk string
    });
    BOOST_TEST(server.url() == "redis://127.0.0.1:" + std::to_string(server.port()));

    raw_client client(server.port());
    BOOST_TEST(client.command("*2\r\n$5\r\nHELLO\r\n$1\r\n3\r\n") == "-ERR unknown command 'HELLO'\r\n");
    // Two pipelined commands, the second split across writes: one call each, replies in order.
    client.write("*1\r\n$4\r\nPING\r\n*1\r\n$4\r\nPI");
    client.write("NG\r\n");
    boost::system::error_code ec;
    BOOST_TEST(client.read_until("\r\n", 2s, ec) == "+PONG\r\n");
    BOOST_TEST(client.read_until("\r\n", 2s, ec) == "+PONG\r\n");
    BOOST_TEST(client.command("PING\r\n") == "+PONG\r\n");  // inline form
    client.write("SILENT\r\nGET x\r\n");
    BOOST_TEST(client.read_until("hel", 2s, ec) == "$5\r\nhel");
    BOOST_TEST(calls.load() == 6);

    client.write("QUIT\r\n");
    client.read_until("\r\n", 2s, ec);
    BOOST_TEST((ec == asio::error::eof));
    BOOST_TEST(server.connections() == 1u);
}

BOOST_AUTO_TEST_CASE(scripted_server_can_reset_the_connection)
{
    scripted_server server([](std::string_view) { return scripted_server::reset_connection; });
    raw_client client(server.port());
    client.write("PING\r\n");
    boost::system::error_code ec;
    client.read_until("\r\n", 2s, ec);
    BOOST_TEST((ec == asio::error::connection_reset));
}

BOOST_AUTO_TEST_CASE(arguments_parse_resp_and_inline_commands)
{
    using args = std::vector<std::string>;
    BOOST_TEST((scripted_server::arguments("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$0\r\n\r\n") == args{"SET", "k", ""}));
    BOOST_TEST((scripted_server::arguments("GET  key\r\n") == args{"GET", "key"}));
    BOOST_TEST(scripted_server::command_length("*1\r\n$4\r\nPI") == 0u);
    BOOST_TEST(scripted_server::command_length("*1\r\n$4\r\nPING\r\nrest") == 14u);
    BOOST_TEST(scripted_server::command_length("*x\r\n") == 4u);  // malformed: one line
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(clock_shim)

BOOST_AUTO_TEST_CASE(time_on_a_shimmed_node_follows_set_clock)
{
    node_options options;
    options.clock_shim = true;
    redis_node node(options);
    auto skew = node_time_ms(node) - system_time_ms();
    BOOST_TEST_MESSAGE("shimmed node, offset 0: TIME - real = " << skew << " ms");
    BOOST_TEST(std::abs(skew) < 1000);

    node.set_clock(+60000);
    skew = node_time_ms(node) - system_time_ms();
    BOOST_TEST_MESSAGE("after set_clock(+60000): TIME - real = " << skew << " ms");
    BOOST_TEST(skew > 59000);
    BOOST_TEST(skew < 61000);

    node.set_clock(-60000);
    skew = node_time_ms(node) - system_time_ms();
    BOOST_TEST_MESSAGE("after set_clock(-60000): TIME - real = " << skew << " ms");
    BOOST_TEST(skew < -59000);
    BOOST_TEST(skew > -61000);
}

BOOST_AUTO_TEST_CASE(a_forward_jump_expires_keys_at_once)
{
    node_options options;
    options.clock_shim = true;
    redis_node node(options);
    BOOST_TEST(node.cli({"SET", "lock", "a", "PX", "5000"}) == "OK");
    BOOST_TEST(node.cli({"EXISTS", "lock"}) == "1");
    node.set_clock(+10000);
    BOOST_TEST(node.cli({"EXISTS", "lock"}) == "0");
    BOOST_TEST(node.cli({"SET", "lock", "b", "NX", "PX", "5000"}) == "OK");
}

BOOST_AUTO_TEST_CASE(a_faster_clock_expires_keys_sooner)
{
    node_options options;
    options.clock_shim = true;
    redis_node node(options);
    node.set_clock(0, 10.0);
    BOOST_TEST(node.cli({"SET", "lock", "a", "PX", "3000"}) == "OK");
    auto start = steady_clock::now();
    BOOST_TEST(wait_until([&] { return node.cli({"EXISTS", "lock"}) == "0"; }, 5s));
    auto gone = elapsed_ms(start);
    BOOST_TEST_MESSAGE("PX 3000 at rate 10 expired after " << gone << " ms real time");
    BOOST_TEST(gone < 1500);
}

BOOST_AUTO_TEST_CASE(set_clock_needs_the_shim)
{
    redis_node node;
    BOOST_CHECK_THROW(node.set_clock(1000), std::logic_error);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(runner)

asio::awaitable<void> sleep_then_throw(std::chrono::milliseconds delay)
{
    asio::steady_timer timer(co_await asio::this_coro::executor, delay);
    co_await timer.async_wait(asio::use_awaitable);
    throw std::runtime_error("thrown inside the coroutine");
}

asio::awaitable<void> wait_forever(bool& woke)
{
    asio::steady_timer timer(co_await asio::this_coro::executor, std::chrono::hours(1));
    co_await timer.async_wait(asio::as_tuple(asio::use_awaitable));  // woken early only by cancellation
    woke = true;
}

BOOST_AUTO_TEST_CASE(run_coro_rethrows_what_the_coroutine_threw)
{
    BOOST_CHECK_THROW(run_coro([] { return sleep_then_throw(10ms); }, 10s), std::runtime_error);
}

BOOST_AUTO_TEST_CASE(run_coro_returns_when_done_although_other_work_remains)
{
    asio::io_context ctx;
    bool woke = false;
    asio::co_spawn(ctx, wait_forever(woke), [](std::exception_ptr) {});
    int steps = 0;
    auto start = steady_clock::now();
    run_coro(
        ctx,
        [&]() -> asio::awaitable<void> {
            asio::steady_timer timer(co_await asio::this_coro::executor, 20ms);
            co_await timer.async_wait(asio::use_awaitable);
            ++steps;
        },
        10s);
    BOOST_TEST(steps == 1);
    BOOST_TEST(elapsed_ms(start) < 1000);
    // The context is still usable: run the same again.
    run_coro(ctx, [&]() -> asio::awaitable<void> {
        ++steps;
        co_return;
    });
    BOOST_TEST(steps == 2);
    BOOST_TEST(!woke);
}

BOOST_AUTO_TEST_CASE(wait_until_reports_whether_the_condition_came_true)
{
    auto start = steady_clock::now();
    BOOST_TEST(wait_until([&] { return elapsed_ms(start) >= 30; }, 2s));
    BOOST_TEST(!wait_until([] { return false; }, 50ms));
    BOOST_TEST(elapsed_ms(start) >= 80);
}

BOOST_AUTO_TEST_SUITE_END()
