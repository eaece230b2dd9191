// The small programs of example/ run against real nodes as doc/examples.md says to run them: each exits 0 (each
// checks its own claims: exclusion, the quorum rule, the fencing refusal...) and prints what the docs show. The
// HTTP server of example/http_counter.cpp is started on a free port and sent requests.
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http.hpp>
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <common/processes/http_client.hpp>
#include <common/processes/service_process.hpp>
#include <common/processes/subprocess.hpp>
#include <common/servers/redis_node.hpp>
#include <set>
#include <string>
#include <vector>

using namespace std::chrono_literals;
using namespace redlock::test;
namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;

namespace {

// Runs `program` with the node list as its argument; returns its stdout.
std::string run_example(const std::string& program, const std::string& nodes, std::chrono::milliseconds limit = 60s)
{
    const auto result = run_command({program, nodes}, limit);
    BOOST_TEST_MESSAGE(program << ":\n" << result.out << result.err);
    BOOST_TEST(result.exit_code == 0, program << " exited " << result.exit_code << ":\n" << result.err);
    return result.out;
}

bool has(const std::string& output, const std::string& text)
{
    return output.find(text) != std::string::npos;
}

// example/http_counter on `nodes`, listening on a free port.
service_process start_http_counter(const cluster& nodes)
{
    return service_process({REDLOCK_EXAMPLE_HTTP_COUNTER, comma_joined(nodes.urls()), "0"},
                           make_temp_dir("redlock-http-counter-") + "/service.log");
}

struct http_answer {
    unsigned status = 0;
    std::string body;
    bool keep_alive = false;
};

// `count` requests, one after another on one kept-alive connection to 127.0.0.1:`port`.
asio::awaitable<std::vector<http_answer>> on_one_connection(std::uint16_t port, http::verb method, std::string target,
                                                            int count)
{
    beast::tcp_stream stream(co_await asio::this_coro::executor);
    stream.expires_after(60s);
    co_await stream.async_connect({asio::ip::make_address("127.0.0.1"), port}, asio::use_awaitable);
    beast::flat_buffer buffer;
    std::vector<http_answer> answers;
    for (int i = 0; i < count; ++i) {
        http::request<http::empty_body> req{method, target, 11};
        req.set(http::field::host, "127.0.0.1");
        req.prepare_payload();
        co_await http::async_write(stream, req, asio::use_awaitable);
        http::response<http::string_body> res;
        co_await http::async_read(stream, buffer, res, asio::use_awaitable);
        answers.push_back({res.result_int(), res.body(), res.keep_alive()});
    }
    co_return answers;
}

}  // namespace

BOOST_AUTO_TEST_CASE(quickstart_pipelines_and_coalesces)
{
    redis_node node;
    const auto out = run_example(REDLOCK_EXAMPLE_QUICKSTART, node.url());
    BOOST_TEST(has(out, "GET greeting -> hello"));
    BOOST_TEST(has(out, "10000 concurrent INCRs: 0 failed"));
    BOOST_TEST(has(out, "parsed a list of 3 nodes, the last redis://10.0.0.3:6379"));
}

BOOST_AUTO_TEST_CASE(lock_basic_locks_on_one_node_and_on_five)
{
    cluster nodes(5);
    const auto out = run_example(REDLOCK_EXAMPLE_LOCK_BASIC, comma_joined(nodes.urls()));
    BOOST_TEST(has(out, "-- 1 node(s), quorum 1"));
    BOOST_TEST(has(out, "-- 5 node(s), quorum 3"));
    BOOST_TEST(has(out, "a second owner's try_lock: not acquired: held by others"));
}

BOOST_AUTO_TEST_CASE(redlock_five_nodes_survives_two_nodes_down_and_not_three)
{
    cluster nodes(5);
    const auto out = run_example(REDLOCK_EXAMPLE_REDLOCK_FIVE_NODES, comma_joined(nodes.urls()));
    BOOST_TEST(has(out, "-- 5 nodes: a lock needs 3 grants, so 2 nodes may fail"));
    BOOST_TEST(has(out, "-- 2 of 5 nodes down\nlock: acquired"));
    BOOST_TEST(has(out, "-- 3 of 5 nodes down\nlock: no quorum"));
}

BOOST_AUTO_TEST_CASE(with_lock_watchdog_keeps_the_lock_and_reports_its_loss)
{
    cluster nodes(3);
    const auto out = run_example(REDLOCK_EXAMPLE_WITH_LOCK_WATCHDOG, comma_joined(nodes.urls()));
    BOOST_TEST(has(out, "the body returned 6"));
    BOOST_TEST(has(out, "with_lock threw after"));
}

BOOST_AUTO_TEST_CASE(callbacks_and_futures_take_the_lock)
{
    cluster nodes(3);
    const auto out = run_example(REDLOCK_EXAMPLE_CALLBACKS, comma_joined(nodes.urls()));
    BOOST_TEST(has(out, "callbacks: released"));
    BOOST_TEST(has(out, "future: released"));
}

BOOST_AUTO_TEST_CASE(fencing_refuses_the_stalled_holder)
{
    cluster nodes(3);
    const auto out = run_example(REDLOCK_EXAMPLE_FENCING, comma_joined(nodes.urls()));
    BOOST_TEST(has(out, "the stale holder was fenced out"));
}

BOOST_AUTO_TEST_CASE(semaphore_caps_the_jobs)
{
    cluster nodes(3);
    const auto out = run_example(REDLOCK_EXAMPLE_SEMAPHORE, comma_joined(nodes.urls()));
    BOOST_TEST(!has(out, "beside 3 other(s)"));  // a limit of 3: never a fourth job at once
    BOOST_TEST(has(out, "reindex holds 2 permits"));
}

BOOST_AUTO_TEST_CASE(read_write_lock_lets_readers_share_and_the_rebuild_run_alone)
{
    cluster nodes(3);
    const auto out = run_example(REDLOCK_EXAMPLE_READ_WRITE_LOCK, comma_joined(nodes.urls()));
    BOOST_TEST(has(out, "the rebuild runs alone"));
    BOOST_TEST(has(out, "downgraded: still"));
    BOOST_TEST(has(out, "upgraded: writing"));  // the only reader by then
    BOOST_TEST(has(out, "the rebuild always alone"));
}

BOOST_AUTO_TEST_CASE(leader_election_has_one_leader_at_a_time)
{
    cluster nodes(3);
    const auto out = run_example(REDLOCK_EXAMPLE_LEADER_ELECTION, comma_joined(nodes.urls()));
    for (const auto* name : {"alpha", "beta", "gamma"}) BOOST_TEST(has(out, std::string(name) + " leads, term"));
    BOOST_TEST(has(out, "observer: nobody leads"));
    BOOST_TEST(has(out, ": writing the report'"));  // the observer saw a proclaimed value
    BOOST_TEST(has(out, "one leader at a time, terms increasing, the deposed leader's write refused"));
}

// A limiter over N nodes is refused at compile time now (the example's static_asserts): it runs on the first node.
BOOST_AUTO_TEST_CASE(rate_limit_admits_the_burst_on_the_first_node)
{
    cluster nodes(3);
    const auto out = run_example(REDLOCK_EXAMPLE_RATE_LIMIT, comma_joined(nodes.urls()));
    BOOST_TEST(has(out, "21 of 25 calls admitted at once"));
    BOOST_TEST(has(out, "429 Too Many Requests"));
    BOOST_TEST(has(out, "upload of 200000 bytes admitted"));
}

BOOST_AUTO_TEST_CASE(cache_loads_once)
{
    cluster nodes(3);
    const auto out = run_example(REDLOCK_EXAMPLE_CACHE, comma_joined(nodes.urls()));
    BOOST_TEST(has(out, "user:ada -> Ada Lovelace (a miss: 1 query)"));
    // The ten concurrent callers and the hit after them: one more query in all.
    std::size_t alans = 0;
    for (auto at = out.find("user:alan -> Alan Turing, 2 database queries so far\n"); at != std::string::npos;
         at = out.find("user:alan -> Alan Turing, 2 database queries so far\n", at + 1))
        ++alans;
    BOOST_TEST(alans == 11u);
    BOOST_TEST(!has(out, "user:alan -> Alan Turing, 3"));
    BOOST_TEST(has(out,
                   "user:nobody -> (no such user), 3 database queries so far\n"
                   "user:nobody -> (no such user), 3 database queries so far\n"));
    BOOST_TEST(has(out, "user:mallory -> (no such user), 0 database queries (the Bloom filter answered)"));
}

// The example checks its counts itself: with a first node (the store) that refuses every write (maxmemory 1 byte,
// noeviction), nothing is cached, the hit after the ten callers queries the database again, and the example
// says so and exits 1 (the lock still has 2 of 3 nodes).
BOOST_AUTO_TEST_CASE(cache_exits_1_on_a_wrong_count)
{
    cluster nodes(3);
    BOOST_REQUIRE(nodes[0].cli({"CONFIG", "SET", "maxmemory", "1"}) == "OK");
    const auto result = run_command({REDLOCK_EXAMPLE_CACHE, comma_joined(nodes.urls())}, 60s);
    BOOST_TEST_MESSAGE("cache:\n" << result.out << result.err);
    BOOST_TEST(result.exit_code == 1);
    BOOST_TEST(has(result.err, "error: 3 database queries after a hit, expected 2"), result.err);
}

BOOST_AUTO_TEST_CASE(the_tutorial_program_locks_and_releases)
{
    redis_node node;
    const auto out = run_example(REDLOCK_EXAMPLE_TUTORIAL, node.url());
    BOOST_TEST(has(out, "locked tutorial:report after"));
    BOOST_TEST(has(out, "released"));
}

// 8 kept-alive connections send 25 increments each to one counter at once, so that the requests queue for its lock:
// every one is answered 200 on its connection, the values answered are 1 to 200, each once, and the counter ends
// at 200. A read-modify-write outside the lock (or a lock that let two holders in) loses increments: values repeat
// and the counter ends lower.
BOOST_AUTO_TEST_CASE(http_counter_counts_every_concurrent_increment)
{
    cluster nodes(3);
    service_process service = start_http_counter(nodes);
    constexpr int connections = 8, per_connection = 25, total = connections * per_connection;
    asio::io_context ctx;
    std::vector<http_answer> answers;
    for (int c = 0; c < connections; ++c)
        asio::co_spawn(ctx,
                       on_one_connection(service.port(), http::verb::post, "/counter/hits/increment", per_connection),
                       [&](std::exception_ptr e, std::vector<http_answer> got) {
                           if (e) std::rethrow_exception(e);
                           answers.insert(answers.end(), got.begin(), got.end());
                       });
    ctx.run();
    std::set<long> values;
    for (const auto& a : answers) {
        BOOST_TEST(a.status == 200u, a.status << " " << a.body);
        BOOST_TEST(a.keep_alive);
        if (a.status == 200u) values.insert(std::stol(a.body));
    }
    BOOST_TEST(answers.size() == std::size_t{total});
    BOOST_TEST_REQUIRE(values.size() == std::size_t{total});  // no value twice...
    BOOST_TEST(*values.begin() == 1);                         // ... so 1 to 200, each once
    BOOST_TEST(*values.rbegin() == total);
    BOOST_TEST(send_http(service.port(), {.target = "/counter/hits"}).body == std::to_string(total) + "\n");
    BOOST_TEST(nodes[0].cli({"GET", "{counter:hits}:value"}) == std::to_string(total));
    BOOST_TEST(!has(service.output(), "session:"), service.output());
}

// Its failures as doc/examples.md maps them: a lock held by another owner for longer than the wait -> 409; a newer
// holder's token already on the counter's guard -> 409, nothing written; an unknown path -> 404; two of three lock
// nodes down (no quorum) -> 503 with Retry-After, while the counter can still be read from the store.
BOOST_AUTO_TEST_CASE(http_counter_maps_failures_to_statuses)
{
    cluster nodes(3);
    service_process service = start_http_counter(nodes);
    const auto increment = [&](const std::string& name) {
        return send_http(service.port(), {.method = http::verb::post, .target = "/counter/" + name + "/increment"});
    };
    BOOST_TEST(increment("a").body == "1\n");

    // The lock key is the name the service locks, its value the owner's token: another owner holds it everywhere.
    for (std::size_t i = 0; i < nodes.size(); ++i) nodes[i].cli({"SET", "counter:a", "another-owner", "PX", "30000"});
    const auto busy = increment("a");
    BOOST_TEST(busy.status == 409u, busy.status << " " << busy.body);
    BOOST_TEST(has(busy.body, "not acquired"), busy.body);
    for (std::size_t i = 0; i < nodes.size(); ++i) nodes[i].cli({"DEL", "counter:a"});

    // A holder with a far newer fencing token has written: the service's claim is refused and nothing is written.
    BOOST_REQUIRE(nodes[0].cli({"SET", "{counter:a}:guard", "1000000"}) == "OK");
    const auto superseded = increment("a");
    BOOST_TEST(superseded.status == 409u, superseded.status << " " << superseded.body);
    BOOST_TEST(has(superseded.body, "newer fencing token"), superseded.body);
    BOOST_TEST(nodes[0].cli({"GET", "{counter:a}:value"}) == "1");

    BOOST_TEST(send_http(service.port(), {.target = "/counter/a/increment"}).status == 404u);  // a GET
    BOOST_TEST(send_http(service.port(), {.target = "/counter/a:b"}).status == 404u);

    nodes[1].kill();
    nodes[2].kill();
    const auto down = increment("b");
    BOOST_TEST(down.status == 503u, down.status << " " << down.body);
    BOOST_TEST(down.header("retry-after") == "1");
    BOOST_TEST(has(down.body, "no quorum"), down.body);
    BOOST_TEST(send_http(service.port(), {.target = "/counter/a"}).body == "1\n");
}
