// example/http_inventory under faults, end to end: 500 customers reserve concurrently through two instances of
// the service for a stock of 100, retrying (with their own Idempotency-Key) on 503 or a lost connection, as a
// real client does. Exactly 100 must get their reservation, each recorded in the store with the fencing token
// they were told, and the stock must end at exactly 0:
// - while a lock node is killed, one instance's network to its Redis nodes slows down until its holder loses
//   its lease mid-reservation, and later that instance is stopped (SIGSTOP) for twice the lease;
// - while one instance is sent SIGTERM: it drains (its accepted requests finish) and exits 0, and no reservation
//   a customer was told about is missing from the store.
// The readiness, timeouts and drain deadline of one instance, and a stale holder's refused write step by step,
// are in test/integration/example.
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <common/processes/http_client.hpp>
#include <common/processes/service_process.hpp>
#include <common/processes/subprocess.hpp>
#include <common/servers/fault_proxy.hpp>
#include <common/servers/redis_node.hpp>
#include <csignal>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
using namespace redlock::test;
namespace asio = boost::asio;
namespace http = boost::beast::http;
using std::chrono::steady_clock;

namespace {

#ifdef REDLOCK_TEST_SANITIZED
constexpr int customers = 200;  // sanitized builds are several times slower; the property is the same
constexpr int stock = 40;
#else
constexpr int customers = 500;
constexpr int stock = 100;
#endif

struct customer_result {
    unsigned status = 0;  // the final answer: 201 or 200 (reserved), 409 (sold out); 0: gave up
    std::string order;
    std::string token;
    std::vector<std::string> trail;  // every attempt's status or error, for failure messages
};

// What the test does to the deployment once `successes` customers have their reservation: faults injected at
// a point of the sale's own progress, so they always land mid-sale however fast the machine is.
struct milestone {
    int successes;
    std::function<void(asio::any_io_executor)> action;
};

struct crowd_state {
    std::vector<customer_result> results = std::vector<customer_result>(customers);
    std::vector<milestone> milestones;
    int successes = 0;
};

// One customer: reserves once, moving to the other instance and retrying after a 503, a 429 or a connection
// error (an instance stopping), with the same Idempotency-Key, until a final answer or `give_up_at`.
asio::awaitable<void> customer(std::vector<std::uint16_t> ports, std::string item, int index, crowd_state& crowd,
                               steady_clock::time_point give_up_at)
{
    auto& out = crowd.results[static_cast<std::size_t>(index)];
    // Nine in ten start on the first instance. The second, with fewer waiters, sells to its own customers
    // early (one release wakes one waiter per process, and either may win); then the first holds the lock
    // alone, so the faults injected there in the second half of the sale hit a holder mid-way.
    std::size_t instance = index % 10 == 0 ? 1 % ports.size() : 0;
    asio::steady_timer pause(co_await asio::this_coro::executor);
    while (steady_clock::now() < give_up_at) {
        http_call call{.method = http::verb::post,
                       .target = "/items/" + item + "/reserve",
                       .headers = {{"Idempotency-Key", "c-" + std::to_string(index)}},
                       .timeout = 20s};
        auto attempt = async_http(ports[instance], std::move(call));
        const http_reply r = co_await std::move(attempt);
        out.trail.push_back(r.status ? std::to_string(r.status) : r.error.message());
        if (r.status == 201 || r.status == 200 || r.status == 409) {
            out.status = r.status;
            out.order = json_member(r.body, "order").value_or("");
            out.token = json_member(r.body, "fencing_token").value_or("");
            if (r.status != 409) {
                ++crowd.successes;
                for (auto& m : crowd.milestones)
                    if (m.successes == crowd.successes) m.action(pause.get_executor());
            }
            co_return;
        }
        instance = (instance + 1) % ports.size();
        pause.expires_after(std::chrono::milliseconds(10 + index % 20));
        co_await pause.async_wait(asio::as_tuple(asio::use_awaitable));
    }
}

// All customers at once, on this thread's own io_context; returns when every one has a final answer or gave up.
std::vector<customer_result> run_crowd(std::vector<std::uint16_t> ports, const std::string& item,
                                       std::vector<milestone> milestones)
{
    crowd_state crowd;
    crowd.milestones = std::move(milestones);
    asio::io_context ctx;
    const auto give_up_at = steady_clock::now() + 90s;
    for (int i = 0; i < customers; ++i)
        asio::co_spawn(ctx, customer(ports, item, i, crowd, give_up_at), [](std::exception_ptr e) {
            if (e) std::rethrow_exception(e);
        });
    ctx.run();
    return std::move(crowd.results);
}

std::map<std::string, std::string> hash_of(const redis_node& node, const std::string& key)
{
    std::istringstream lines(node.cli({"HGETALL", key}));
    std::map<std::string, std::string> out;
    std::string field, value;
    while (std::getline(lines, field) && std::getline(lines, value)) out[field] = value;
    return out;
}

// The instance's reservation outcomes from its /metrics (fenced_out: a late write refused), for the log.
std::string reservation_counts(std::uint16_t port)
{
    std::istringstream lines(send_http(port, {.target = "/metrics"}).body);
    std::string out, line;
    while (std::getline(lines, line))
        if (line.starts_with("inventory_reservations_total")) out += "  " + line + "\n";
    return out;
}

struct deployment {
    cluster lock_nodes{3};
    redis_node store;
    std::string dir = make_temp_dir("redlock-http-inventory-");

    std::vector<std::string> instance_args(const std::vector<std::string>& extra) const
    {
        return instance_args_via(lock_nodes.urls(), store.url(), extra);
    }
    // An instance that reaches the nodes at other addresses (proxies).
    std::vector<std::string> instance_args_via(const std::vector<std::string>& lock_urls, const std::string& store_url,
                                               const std::vector<std::string>& extra) const
    {
        std::vector<std::string> args{REDLOCK_HTTP_INVENTORY_PATH,
                                      "--listen",
                                      "127.0.0.1:0",
                                      "--nodes",
                                      comma_joined(lock_urls),
                                      "--store",
                                      store_url,
                                      "--rate",
                                      "0",
                                      "--lock-ttl",
                                      "500ms",
                                      "--request-timeout",
                                      "10s",
                                      "--drain-timeout",
                                      "15s"};
        args.insert(args.end(), extra.begin(), extra.end());
        return args;
    }

    void set_stock(std::uint16_t port, const std::string& item) const
    {
        const auto r = send_http(port, {.method = http::verb::put,
                                        .target = "/items/" + item,
                                        .body = "{\"stock\": " + std::to_string(stock) + "}"});
        BOOST_TEST_REQUIRE(r.status == 200u, r.body << r.error.message());
    }
};

// The invariants of a sale: exactly `stock` customers reserved, the others were told it sold out, the store
// has exactly their orders with the tokens they were told, and the stock is exactly 0.
void check_sale(const deployment& d, const std::string& item, const std::vector<customer_result>& results)
{
    std::map<std::string, std::string> told;  // order -> token, as the customers heard it
    int reserved = 0, sold_out = 0, gave_up = 0;
    for (std::size_t i = 0; i < results.size(); ++i) {
        const auto& r = results[i];
        if (r.status == 201 || r.status == 200) {
            ++reserved;
            BOOST_TEST(r.order == "c-" + std::to_string(i));
            told[r.order] = r.token;
        } else if (r.status == 409) {
            ++sold_out;
        } else {
            ++gave_up;
            std::string trail;
            for (const auto& t : r.trail) trail += t + " ";
            BOOST_ERROR("customer " << i << " got no final answer: " << trail);
        }
    }
    BOOST_TEST(reserved == stock);
    BOOST_TEST(sold_out == customers - stock);
    BOOST_TEST(gave_up == 0);

    const auto recorded = hash_of(d.store, "{inventory:item:" + item + "}:orders");
    BOOST_TEST(recorded.size() == static_cast<std::size_t>(stock));
    BOOST_TEST(d.store.cli({"GET", "{inventory:item:" + item + "}:stock"}) == "0");
    // Every reservation a customer heard of is in the store, with its token; the store has no other.
    for (const auto& [order, token] : told) {
        auto it = recorded.find(order);
        BOOST_TEST_CONTEXT("order " << order) BOOST_TEST((it != recorded.end() && it->second == token));
    }
    for (const auto& [order, token] : recorded)
        BOOST_TEST_CONTEXT("order " << order) BOOST_TEST(told.count(order) == 1u);
    // Each reservation was written under its own grant of the lock.
    std::set<std::string> tokens;
    for (const auto& [order, token] : recorded) tokens.insert(token);
    BOOST_TEST(tokens.size() == recorded.size());
}

}  // namespace

BOOST_AUTO_TEST_CASE(two_instances_sell_exactly_the_stock_with_a_lock_node_killed_and_an_instance_stalled)
{
    deployment d;
    // Instance a reaches every node through a proxy of its own, so its network can be slowed while b's is not.
    std::vector<std::unique_ptr<fault_proxy>> a_network;
    std::vector<std::string> a_lock_urls;
    for (std::size_t n = 0; n < d.lock_nodes.size(); ++n) {
        a_network.push_back(std::make_unique<fault_proxy>(d.lock_nodes[n].port()));
        a_lock_urls.push_back(a_network.back()->url());
    }
    a_network.push_back(std::make_unique<fault_proxy>(d.store.port()));
    service_process a(d.instance_args_via(a_lock_urls, a_network.back()->url(), {}), d.dir + "/a.log");
    service_process b(d.instance_args({}), d.dir + "/b.log");
    d.set_stock(a.port(), "sale");

    // Mid-sale: a lock node dies (2 of 3 remain, a quorum). Then a's store slows down (every byte 1.5 s late),
    // so a's holder is soon stuck with its claim or its write in flight, and 100 ms later a's lock nodes too:
    // that holder cannot extend its lease, loses it, and its customers retry on b, which takes the lock with a
    // higher token; when a's late claim or write reaches the store, its token must be refused. Later a stops
    // (SIGSTOP) for twice the lease: a GC pause, a stopped VM.
    auto slow = [&](std::size_t first, std::size_t last, std::chrono::milliseconds delay) {
        for (std::size_t i = first; i < last; ++i)
            a_network[i]->set_mode(delay.count() ? fault_proxy::mode::delay : fault_proxy::mode::pass, delay);
    };
    const std::size_t store_path = d.lock_nodes.size();
    std::vector<milestone> faults{
        {stock / 5, [&](asio::any_io_executor) { d.lock_nodes[0].kill(); }},
        {stock * 6 / 10,
         [&](asio::any_io_executor ex) {
             slow(store_path, store_path + 1, 1500ms);
             auto then = std::make_shared<asio::steady_timer>(ex, 100ms);
             then->async_wait([then, &slow, store_path](boost::system::error_code) {
                 slow(0, store_path, 1500ms);
                 then->expires_after(1500ms);
                 then->async_wait(
                     [then, &slow, store_path](boost::system::error_code) { slow(0, store_path + 1, 0ms); });
             });
         }},
        {stock * 8 / 10, [&](asio::any_io_executor ex) {
             a.signal(SIGSTOP);
             auto resume = std::make_shared<asio::steady_timer>(ex, 1s);
             resume->async_wait([resume, &a](boost::system::error_code) { a.signal(SIGCONT); });
         }}};
    std::vector<customer_result> results;
    std::thread crowd([&] { results = run_crowd({a.port(), b.port()}, "sale", faults); });
    crowd.join();

    BOOST_TEST_MESSAGE("instance a:\n"
                       << a.output() << reservation_counts(a.port()) << "instance b:\n"
                       << b.output() << reservation_counts(b.port()));
    BOOST_TEST(!d.lock_nodes[0].running());
    check_sale(d, "sale", results);
    // Every lease was released: no lock key is left on the nodes that are up.
    for (std::size_t n = 1; n < d.lock_nodes.size(); ++n)
        BOOST_TEST(d.lock_nodes[n].cli({"EXISTS", "inventory:lock:sale"}) == "0");
}

BOOST_AUTO_TEST_CASE(a_sigterm_during_the_sale_drains_the_instance_and_loses_no_reservation)
{
    deployment d;
    service_process a(d.instance_args({}), d.dir + "/a.log");
    service_process b(d.instance_args({}), d.dir + "/b.log");
    d.set_stock(a.port(), "drain");

    // a closes its listener at once: its customers in flight get their answers, the others move to b.
    std::vector<milestone> faults{{stock / 4, [&](asio::any_io_executor) { a.signal(SIGTERM); }}};
    std::vector<customer_result> results;
    std::thread crowd([&] { results = run_crowd({a.port(), b.port()}, "drain", faults); });
    const auto exit_code = a.wait_exit(30s);
    crowd.join();

    BOOST_TEST_MESSAGE("instance a:\n" << a.output() << "instance b:\n" << b.output());
    BOOST_TEST_REQUIRE(exit_code.has_value(), "a did not exit after SIGTERM");
    BOOST_TEST(*exit_code == 0);
    BOOST_TEST(a.output().find("drained; exiting") != std::string::npos);
    check_sale(d, "drain", results);
    for (std::size_t n = 0; n < d.lock_nodes.size(); ++n)
        BOOST_TEST(d.lock_nodes[n].cli({"EXISTS", "inventory:lock:drain"}) == "0");
}
