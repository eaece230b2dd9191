// The Cluster node against scripted members (scripted_server speaking as Redis 7 Cluster masters): what a real
// Cluster shows only by chance, made to happen every time. One slot's order when a refused request's successor ran
// before its retry, subscriptions that follow MOVED, are retried when they failed, and do not come back after
// their unsubscribe, a late drop from an old master, a keyless request's redirect, deadlines of retried requests,
// refresh backoff, a bounded connect and the summed counters.
#include "cluster/cluster_node.hpp"
#include "common/key_slot.hpp"

#include <redlock/redlock.hpp>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <common/fakes/scripted_server.hpp>
#include <common/run_coro.hpp>
#include <cstring>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace asio = boost::asio;
using namespace std::chrono_literals;
using redlock::error;
using redlock::error_code;
using redlock::request;
using redlock::response;
using redlock::test::scripted_server;
using command = std::vector<std::string>;
using steady = std::chrono::steady_clock;

namespace {

std::string bulk(std::string_view s)
{
    return "$" + std::to_string(s.size()) + "\r\n" + std::string(s) + "\r\n";
}

std::string push(std::string_view kind, std::string_view channel, std::string_view last)
{
    return ">3\r\n" + bulk(kind) + bulk(channel) + std::string(last);
}

// Slots first..last are the master's at `port`.
struct slot_range {
    std::uint16_t first;
    std::uint16_t last;
    std::uint16_t port;
};

// A Redis 7 Cluster master on loopback. It answers HELLO, PING and CLUSTER SHARDS (the map the test sets), confirms
// SSUBSCRIBE and SUNSUBSCRIBE, runs SET / GET / DEL on a map of its own; the test's script may answer any command
// first (return nullopt to let the member answer it). It logs every command but HELLO, PING and CLUSTER; frozen
// (freeze), it answers and logs nothing.
class fake_member {
public:
    using script = std::function<std::optional<std::string>(const command&)>;

    fake_member() : server_([this](std::string_view bytes) { return respond(scripted_server::arguments(bytes)); }) {}

    std::uint16_t port() const { return server_.port(); }
    std::string url() const { return "redis+cluster://127.0.0.1:" + std::to_string(port()); }

    void set_map(std::vector<slot_range> map)
    {
        std::lock_guard lock(mutex_);
        map_ = std::move(map);
    }
    void set_script(script s)
    {
        std::lock_guard lock(mutex_);
        script_ = std::move(s);
    }
    void set_map_reply(std::optional<std::string> reply)  // nullopt: the map; else this reply to CLUSTER
    {
        std::lock_guard lock(mutex_);
        map_reply_ = std::move(reply);
    }
    std::vector<command> commands() const
    {
        std::lock_guard lock(mutex_);
        return commands_;
    }
    std::size_t count(const command& c) const
    {
        auto all = commands();
        return static_cast<std::size_t>(std::count(all.begin(), all.end(), c));
    }
    std::size_t map_reads() const { return map_reads_.load(); }
    /// From now on it answers nothing at all, PING and CLUSTER included, as a SIGSTOPped server: a member that
    /// skipped one reply but answered the next command would hand that reply to the hung request.
    void freeze() { frozen_ = true; }

private:
    std::string shards() const
    {
        std::string out = "*" + std::to_string(map_.size()) + "\r\n";
        for (const auto& r : map_) {
            out += "%2\r\n+slots\r\n*2\r\n:" + std::to_string(r.first) + "\r\n:" + std::to_string(r.last) +
                   "\r\n+nodes\r\n*1\r\n%3\r\n+role\r\n+master\r\n+ip\r\n+127.0.0.1\r\n+port\r\n:" +
                   std::to_string(r.port) + "\r\n";
        }
        return out;
    }

    std::string respond(const command& cmd)
    {
        std::lock_guard lock(mutex_);
        if (frozen_) return std::string();
        if (cmd.empty()) return "-ERR empty\r\n";
        const std::string& name = cmd[0];
        if (name == "HELLO") return "%3\r\n+server\r\n+redis\r\n+version\r\n" + bulk("7.2.4") + "+proto\r\n:3\r\n";
        if (name == "PING") return "+PONG\r\n";
        if (name == "CLUSTER") {
            ++map_reads_;
            return map_reply_ ? *map_reply_ : shards();
        }
        commands_.push_back(cmd);
        if (script_) {
            if (auto reply = script_(cmd)) return *reply;
        }
        if (name == "SSUBSCRIBE" || name == "SUNSUBSCRIBE") {
            std::string out;
            for (std::size_t i = 1; i < cmd.size(); ++i)
                out += push(name == "SSUBSCRIBE" ? "ssubscribe" : "sunsubscribe", cmd[i], ":1\r\n");
            return out;
        }
        if (name == "SET" && cmd.size() >= 3) {
            data_[cmd[1]] = cmd[2];
            return "+OK\r\n";
        }
        if (name == "GET" && cmd.size() == 2) {
            auto at = data_.find(cmd[1]);
            return at == data_.end() ? "_\r\n" : bulk(at->second);
        }
        if (name == "DEL" && cmd.size() == 2) return ":" + std::to_string(data_.erase(cmd[1])) + "\r\n";
        if (name == "ECHO" && cmd.size() == 2) {
            // "drop:<ch>": a `sunsubscribe` of <ch> first, as a master whose slot moved away sends it.
            if (cmd[1].starts_with("drop:")) return push("sunsubscribe", cmd[1].substr(5), ":0\r\n") + bulk(cmd[1]);
            return bulk(cmd[1]);
        }
        return "-ERR unknown command '" + name + "'\r\n";
    }

    mutable std::mutex mutex_;
    std::vector<slot_range> map_;
    std::optional<std::string> map_reply_;
    script script_;
    std::vector<command> commands_;
    std::map<std::string, std::string> data_;
    std::atomic<std::size_t> map_reads_{0};
    std::atomic<bool> frozen_{false};
    scripted_server server_;  // last: its thread stops before the state it uses dies
};

redlock::node_config fast_config(const std::string& url)
{
    auto c = redlock::parse_url(url);
    c.reconnect_min_delay = 5ms;
    c.reconnect_max_delay = 50ms;
    c.connect_timeout = 1000ms;
    c.request_timeout = 1000ms;
    c.track_keys = false;  // the scripted servers answer no CLIENT TRACKING
    return c;
}

// Runs `io` until `done` holds; false after `limit`.
bool run_until(asio::io_context& io, const std::function<bool()>& done, std::chrono::milliseconds limit = 5000ms)
{
    const auto deadline = steady::now() + limit;
    if (io.stopped()) io.restart();
    while (!done()) {
        if (steady::now() >= deadline) return false;
        io.run_one_for(10ms);
        if (io.stopped()) io.restart();
    }
    return true;
}

request command_request(const command& c)
{
    request r;
    r.push_range(c.at(0), std::vector<std::string>(c.begin() + 1, c.end()));
    return r;
}

// Runs one request on `node` to completion.
error_code exec(asio::io_context& io, redlock::node& node, const request& req, response& resp, const std::string& key)
{
    std::optional<error_code> result;
    node.async_exec(req, resp, key, [&](error_code ec) { result = ec; });
    BOOST_REQUIRE(run_until(io, [&] { return result.has_value(); }));
    return *result;
}

error_code subscribe(asio::io_context& io, redlock::node& node, std::vector<std::string> channels,
                     redlock::diagnostics* diag_out = nullptr)
{
    std::optional<error_code> result;
    redlock::diagnostics diag;
    node.async_subscribe(std::move(channels), diag, [&](error_code ec) { result = ec; });
    BOOST_REQUIRE(run_until(io, [&] { return result.has_value(); }));
    if (diag_out != nullptr) *diag_out = diag;
    return *result;
}

error_code connect(asio::io_context& io, redlock::node& node)
{
    std::optional<error_code> result;
    redlock::diagnostics diag;
    node.async_connect(diag, [&](error_code ec) { result = ec; });
    BOOST_REQUIRE(run_until(io, [&] { return result.has_value(); }));
    return *result;
}

}  // namespace

// Finding: a refused request went back to its lane and ran after a later request of its slot that had run meanwhile
// (an acquire retried after the release that followed it: the key held for a TTL). Both are pipelined to one
// master; the first is refused with CLUSTERDOWN, the second runs: the first must not run after it.
BOOST_AUTO_TEST_CASE(a_refused_request_is_not_retried_after_a_later_request_of_its_slot_ran)
{
    bool refused_once = false;  // before the member: its thread reads it until the member is gone
    fake_member a;
    a.set_map({{0, 16383, a.port()}});
    a.set_script([&](const command& c) -> std::optional<std::string> {
        if (c == command{"SET", "k", "1"} && !std::exchange(refused_once, true))
            return "-CLUSTERDOWN The cluster is down\r\n";
        return std::nullopt;
    });
    asio::io_context io;
    auto node = redlock::make_node(io.get_executor(), fast_config(a.url()));
    auto acquire = command_request({"SET", "k", "1"});
    auto release = command_request({"DEL", "k"});
    response r1, r2;
    std::optional<error_code> e1, e2;
    node->async_exec(acquire, r1, "k", [&](error_code ec) { e1 = ec; });
    node->async_exec(release, r2, "k", [&](error_code ec) { e2 = ec; });
    BOOST_REQUIRE(run_until(io, [&] { return e1 && e2; }));
    BOOST_TEST(!*e2);
    // The acquire's answer is its refusal: it did not run, and running it now would reorder it after the release.
    BOOST_TEST((*e1 == error::server_error));
    BOOST_TEST(a.count({"SET", "k", "1"}) == 1u);
    const auto all = a.commands();
    BOOST_TEST((all.back() == command{"DEL", "k"}));
    node->close();
    run_until(
        io, [] { return false; }, 50ms);
}

// A slot that moved: every request written behind the refused one is refused too (MOVED concerns the whole slot), so
// none ran, and all are sent again to the new master in their order.
BOOST_AUTO_TEST_CASE(requests_refused_together_by_moved_are_all_sent_again_in_their_order)
{
    fake_member a;
    fake_member b;
    const auto slot = redlock::detail::key_slot("k");
    a.set_map({{0, 16383, a.port()}});
    asio::io_context io;
    auto node = redlock::make_node(io.get_executor(), fast_config(a.url()));
    BOOST_REQUIRE(!connect(io, *node));
    // The slot migrates to b: a refuses it, and both members' maps say so from now on.
    const std::vector<slot_range> migrated{{0, static_cast<std::uint16_t>(slot - 1), a.port()},
                                           {slot, slot, b.port()},
                                           {static_cast<std::uint16_t>(slot + 1), 16383, a.port()}};
    a.set_map(migrated);
    b.set_map(migrated);
    a.set_script([&, b_port = b.port()](const command& c) -> std::optional<std::string> {
        if (c.size() >= 2 && c[1] == "k")
            return "-MOVED " + std::to_string(slot) + " 127.0.0.1:" + std::to_string(b_port) + "\r\n";
        return std::nullopt;
    });
    std::vector<request> reqs{command_request({"SET", "k", "1"}), command_request({"DEL", "k"}),
                              command_request({"SET", "k", "2"})};
    std::vector<response> resps(3);
    std::vector<std::optional<error_code>> results(3);
    for (std::size_t i = 0; i < 3; ++i)
        node->async_exec(reqs[i], resps[i], "k", [&results, i](error_code ec) { results[i] = ec; });
    BOOST_REQUIRE(run_until(io, [&] { return results[0] && results[1] && results[2]; }));
    for (auto& r : results) BOOST_TEST(!*r);
    BOOST_TEST((b.commands() == std::vector<command>{{"SET", "k", "1"}, {"DEL", "k"}, {"SET", "k", "2"}}));
    node->close();
    run_until(
        io, [] { return false; }, 50ms);
}

// Finding: the Cluster node summed its connections' counters field by field and left subscriptions_lost out.
BOOST_AUTO_TEST_CASE(usage_adds_every_counter)
{
    redlock::usage total;
    redlock::usage one{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
    total += one;
    total += one;
    const redlock::usage twice{2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24};
    BOOST_TEST((std::memcmp(&total, &twice, sizeof(redlock::usage)) == 0));
}

BOOST_AUTO_TEST_CASE(a_cluster_nodes_usage_counts_the_channels_a_master_dropped)
{
    fake_member a;
    a.set_map({{0, 16383, a.port()}});
    asio::io_context io;
    auto node = redlock::make_node(io.get_executor(), fast_config(a.url()));
    BOOST_REQUIRE(!subscribe(io, *node, {"ch"}));
    auto req = command_request({"ECHO", "drop:ch"});
    response resp;
    BOOST_TEST(!exec(io, *node, req, resp, "ch"));
    BOOST_TEST(run_until(
        io, [&] { return node->get_usage().subscriptions_lost == 1; }, 2000ms));
    node->close();
    run_until(
        io, [] { return false; }, 50ms);
}

// Finding: a channel whose subscription failed again after its master dropped it was left subscribed nowhere (the
// retry waited for a map that changed, and the map had not).
BOOST_AUTO_TEST_CASE(a_failed_resubscribe_is_tried_again_after_the_next_map_read)
{
    int subscribes = 0;  // before the member: its thread reads it until the member is gone
    fake_member a;
    a.set_map({{0, 16383, a.port()}});
    a.set_script([&](const command& c) -> std::optional<std::string> {
        if (c == command{"SSUBSCRIBE", "ch"} && ++subscribes == 2) return "-ERR not now\r\n";
        return std::nullopt;
    });
    asio::io_context io;
    auto node = redlock::make_node(io.get_executor(), fast_config(a.url()));
    BOOST_REQUIRE(!subscribe(io, *node, {"ch"}));
    auto req = command_request({"ECHO", "drop:ch"});  // a drops ch; the node subscribes it again, refused once
    response resp;
    BOOST_TEST(!exec(io, *node, req, resp, "ch"));
    BOOST_TEST(run_until(
        io,
        [&] {
            return a.count({"SSUBSCRIBE", "ch"}) >= 3;
        },
        3000ms));
    node->close();
    run_until(
        io, [] { return false; }, 50ms);
}

// Finding: a subscription confirmed after its unsubscribe brought the channel back into the node's channels, and every
// later map move subscribed it again at the new master, for good.
BOOST_AUTO_TEST_CASE(a_subscription_confirmed_after_its_unsubscribe_is_not_kept)
{
    fake_member a;
    fake_member b;
    a.set_map({{0, 16383, a.port()}});
    asio::io_context io;
    auto node = redlock::make_node(io.get_executor(), fast_config(a.url()));
    BOOST_REQUIRE(!connect(io, *node));
    std::optional<error_code> subscribed, unsubscribed;
    redlock::diagnostics diag;
    node->async_subscribe({"ch"}, diag, [&](error_code ec) { subscribed = ec; });
    node->async_unsubscribe({"ch"}, [&](error_code ec) { unsubscribed = ec; });  // before the confirmation
    BOOST_REQUIRE(run_until(io, [&] { return subscribed && unsubscribed; }));
    // Every slot moves to b; a request learns it (MOVED) and the node reads the new map.
    a.set_map({{0, 16383, b.port()}});
    b.set_map({{0, 16383, b.port()}});
    const auto slot = redlock::detail::key_slot("x");
    a.set_script([&, b_port = b.port()](const command& c) -> std::optional<std::string> {
        if (c.size() >= 2 && c[1] == "x")
            return "-MOVED " + std::to_string(slot) + " 127.0.0.1:" + std::to_string(b_port) + "\r\n";
        return std::nullopt;
    });
    auto req = command_request({"SET", "x", "1"});
    response resp;
    BOOST_TEST(!exec(io, *node, req, resp, "x"));
    run_until(
        io, [] { return false; }, 300ms);
    BOOST_TEST(b.count({"SSUBSCRIBE", "ch"}) == 0u);
    node->close();
    run_until(
        io, [] { return false; }, 50ms);
}

// Finding: a late `sunsubscribe` from a channel's old master cleared its home even when it lived at another master
// by then: a second SSUBSCRIBE there, and no home meanwhile. Only the link that reports it can lose it.
BOOST_AUTO_TEST_CASE(a_drop_reported_by_a_master_that_is_not_the_channels_home_changes_nothing)
{
    fake_member a;
    a.set_map({{0, 16383, a.port()}});
    asio::io_context io;
    redlock::detail::cluster_node node(io.get_executor(), fast_config(a.url()));
    BOOST_REQUIRE(!subscribe(io, node, {"ch"}));
    node.resubscribe_channels({"ch"}, "127.0.0.1:1");  // late news from a master it left
    run_until(
        io, [] { return false; }, 200ms);
    BOOST_TEST(a.count({"SSUBSCRIBE", "ch"}) == 1u);
    node.resubscribe_channels({"ch"}, "127.0.0.1:" + std::to_string(a.port()));  // its home's: subscribed again
    BOOST_TEST(run_until(
        io,
        [&] {
            return a.count({"SSUBSCRIBE", "ch"}) == 2u;
        },
        2000ms));
    node.close();
    run_until(
        io, [] { return false; }, 50ms);
}

// Finding: a keyless request answered MOVED went back to the first master until its 16 redirects ran out.
BOOST_AUTO_TEST_CASE(a_keyless_request_follows_moved_to_its_target)
{
    fake_member a;
    fake_member b;
    const std::vector<slot_range> map{{0, 8000, a.port()}, {8001, 16383, b.port()}};
    a.set_map(map);
    b.set_map(map);
    a.set_script([&, b_port = b.port()](const command& c) -> std::optional<std::string> {
        if (c == command{"ECHO", "keyless"}) return "-MOVED 9000 127.0.0.1:" + std::to_string(b_port) + "\r\n";
        return std::nullopt;
    });
    asio::io_context io;
    auto node = redlock::make_node(io.get_executor(), fast_config(a.url()));
    auto req = command_request({"ECHO", "keyless"});
    response resp;
    BOOST_TEST(!exec(io, *node, req, resp, ""));
    BOOST_TEST(a.count({"ECHO", "keyless"}) == 1u);
    BOOST_TEST(b.count({"ECHO", "keyless"}) == 1u);
    node->close();
    run_until(
        io, [] { return false; }, 50ms);
}

// Finding: with a stale map, SSUBSCRIBE answered MOVED and the caller got server_error (its waiters then fell back to
// the holder's TTL). The subscription follows MOVED as a request does.
BOOST_AUTO_TEST_CASE(a_subscription_refused_with_moved_is_made_at_the_target)
{
    fake_member a;
    fake_member b;
    a.set_map({{0, 16383, a.port()}});
    asio::io_context io;
    auto node = redlock::make_node(io.get_executor(), fast_config(a.url()));
    BOOST_REQUIRE(!connect(io, *node));
    a.set_map({{0, 16383, b.port()}});  // every slot moved to b; the node has not read it yet
    b.set_map({{0, 16383, b.port()}});
    const auto slot = redlock::detail::key_slot("ch");
    a.set_script([&, b_port = b.port()](const command& c) -> std::optional<std::string> {
        if (c == command{"SSUBSCRIBE", "ch"})
            return "-MOVED " + std::to_string(slot) + " 127.0.0.1:" + std::to_string(b_port) + "\r\n";
        return std::nullopt;
    });
    redlock::diagnostics diag;
    const auto ec = subscribe(io, *node, {"ch"}, &diag);
    BOOST_TEST(!ec, ec.message() << ": " << diag.message());
    BOOST_TEST(b.count({"SSUBSCRIBE", "ch"}) == 1u);
    node->close();
    run_until(
        io, [] { return false; }, 50ms);
}

// Finding: while the map could not be read, every refused request asked for a read at once, ignoring the refresh
// backoff: map reads back to back for as long as the outage lasted.
BOOST_AUTO_TEST_CASE(failing_map_reads_back_off_whatever_asks_for_them)
{
    fake_member a;
    a.set_map({{0, 16383, a.port()}});
    auto config = fast_config(a.url());
    config.reconnect_min_delay = 50ms;
    config.reconnect_max_delay = 400ms;
    config.request_timeout = 1500ms;
    asio::io_context io;
    auto node = redlock::make_node(io.get_executor(), config);
    BOOST_REQUIRE(!connect(io, *node));
    // The cluster is down: every request is refused, and no member answers the map.
    a.set_map_reply("-ERR cluster state unavailable\r\n");
    a.set_script([](const command& c) -> std::optional<std::string> {
        if (c.at(0) == "SET") return "-CLUSTERDOWN The cluster is down\r\n";
        return std::nullopt;
    });
    const auto reads_before = a.map_reads();
    constexpr int n = 16;
    std::vector<request> reqs;
    for (int i = 0; i < n; ++i) reqs.push_back(command_request({"SET", "k" + std::to_string(i), "1"}));
    std::vector<response> resps(n);
    int done = 0;
    for (int i = 0; i < n; ++i)
        node->async_exec(reqs[i], resps[i], "k" + std::to_string(i), [&](error_code) { ++done; });
    BOOST_REQUIRE(run_until(
        io, [&] { return done == n; }, 5000ms));
    // 1.5 s of failures: reads at 0, then 50, 100, 200, 400, 400... ms apart: about 6; unbounded, hundreds.
    const auto reads = a.map_reads() - reads_before;
    BOOST_TEST(reads <= 12u, reads << " map reads");
    node->close();
    run_until(
        io, [] { return false; }, 50ms);
}

// Finding: the node ended an attempt at its deadline by a cancellation emitted on its own strand, while the
// connection assigns the slot on another (a race on a multi-threaded io_context; a lost emit let a retry run up to a
// whole timeout late). Each attempt now carries the time left as its own timeout: a retry that hangs ends at the
// request's deadline. Two threads run the io_context (under TSan, the old emit races).
BOOST_AUTO_TEST_CASE(a_retried_request_that_hangs_ends_at_its_deadline)
{
    std::mutex seen_mutex;       // before the member: its thread reads them until the member is gone
    std::set<std::string> seen;  // keys refused once
    fake_member a;
    a.set_map({{0, 16383, a.port()}});
    // From the first retry on, the member answers nothing, its health-check PINGs and map reads included (freeze).
    a.set_script([&](const command& c) -> std::optional<std::string> {
        std::lock_guard lock(seen_mutex);
        if (c.at(0) != "SET") return std::nullopt;
        if (seen.insert(c.at(1)).second) return "-CLUSTERDOWN The cluster is down\r\n";
        a.freeze();
        return std::string();
    });
    asio::io_context io;
    auto node = redlock::make_node(io.get_executor(), fast_config(a.url()));
    BOOST_REQUIRE(!connect(io, *node));
    auto work = asio::make_work_guard(io);
    std::vector<std::thread> threads;
    for (int i = 0; i < 2; ++i) threads.emplace_back([&io] { io.run(); });
    constexpr int n = 20;
    std::vector<request> reqs;
    for (int i = 0; i < n; ++i) {
        reqs.push_back(command_request({"SET", "h" + std::to_string(i), "1"}));
        reqs.back().set_timeout(300ms);
    }
    std::vector<response> resps(n);
    std::mutex m;
    std::vector<std::pair<error_code, steady::duration>> results;
    const auto start = steady::now();
    for (int i = 0; i < n; ++i)
        node->async_exec(reqs[i], resps[i], "h" + std::to_string(i), [&](error_code ec) {
            std::lock_guard lock(m);
            results.emplace_back(ec, steady::now() - start);
        });
    const bool all = redlock::test::wait_until(
        [&] {
            std::lock_guard lock(m);
            return results.size() == static_cast<std::size_t>(n);
        },
        3000ms);
    BOOST_TEST(all);
    {
        std::lock_guard lock(m);
        for (const auto& [ec, took] : results) {
            BOOST_TEST((ec == error::timeout), ec.message());
            BOOST_TEST(took < 450ms, std::chrono::duration_cast<std::chrono::milliseconds>(took).count() << " ms");
        }
    }
    node->close();
    work.reset();
    io.stop();
    for (auto& t : threads) t.join();
}

// Finding: the map's sources were tried one after another, then the masters connected one after another, so a URL
// host that accepts and never answers cost its whole connect_timeout before the live seed was asked (and a client
// gave up first). Sources are tried staggered, masters connected at once: connect ends well within the timeout.
BOOST_AUTO_TEST_CASE(connect_is_not_held_up_by_a_silent_url_host_when_a_seed_answers)
{
    scripted_server silent([](std::string_view) { return std::string(); });  // accepts, never answers
    fake_member a;
    fake_member b;
    const std::vector<slot_range> map{{0, 8000, a.port()}, {8001, 16383, b.port()}};
    a.set_map(map);
    b.set_map(map);
    auto config = fast_config("redis+cluster://127.0.0.1:" + std::to_string(silent.port()) +
                              "?seed=127.0.0.1:" + std::to_string(a.port()));
    config.connect_timeout = 800ms;
    asio::io_context io;
    const auto start = steady::now();
    auto node = redlock::make_node(io.get_executor(), config);
    const auto ec = connect(io, *node);
    const auto took = steady::now() - start;
    BOOST_TEST(!ec, ec.message());
    BOOST_TEST(took < 500ms, std::chrono::duration_cast<std::chrono::milliseconds>(took).count() << " ms");
    node->close();
    run_until(
        io, [] { return false; }, 50ms);
}

// A request waiting for the slot map (the seed never answers) whose handler owns the node: the node keeps that
// handler, so destroying the context must free both, as it frees a socket's pending operations.
BOOST_AUTO_TEST_CASE(destroying_the_context_frees_a_waiting_request_whose_handler_owns_the_node)
{
    scripted_server silent([](std::string_view) { return std::string(); });  // accepts, never answers
    std::weak_ptr<int> waiting;
    {
        asio::io_context io;
        struct call {
            std::shared_ptr<redlock::node> node;
            request req = command_request({"GET", "k"});
            response resp;
        };
        auto c = std::make_shared<call>();
        c->node = redlock::make_node(io.get_executor(),
                                     fast_config("redis+cluster://127.0.0.1:" + std::to_string(silent.port())));
        c->req.set_timeout(10s);
        auto alive = std::make_shared<int>();
        waiting = alive;
        c->node->async_exec(c->req, c->resp, "k", [c, alive](error_code) {});
        io.run_for(200ms);
        BOOST_TEST_REQUIRE(!waiting.expired());
    }
    BOOST_TEST(waiting.expired());
}
