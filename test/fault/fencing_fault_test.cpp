// Fencing tokens under faults: nodes killed and restarted (with and without their counters), clocks running
// fast on a majority (Kleppmann's scenario: two holders at once, the resource keeps the newer one), and a
// holder process that stalls past its TTL. Tokens only ever go up, and the resource never accepts a write
// from a holder that has been superseded.
#include <redlock/redlock.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <common/processes/subprocess.hpp>
#include <common/run_coro.hpp>
#include <common/servers/lock_checks.hpp>
#include <common/servers/redis_node.hpp>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

namespace asio = boost::asio;
using namespace std::chrono_literals;
using redlock::error;
using redlock::error_code;
using redlock::node_config;
using redlock::test::cluster;
using redlock::test::configs;
using redlock::test::node_options;
using redlock::test::redis_node;
using redlock::test::rotated;
using redlock::test::run_coro;
using redlock::test::sleep_for;
using steady = std::chrono::steady_clock;
using ms = std::chrono::milliseconds;
constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);

namespace {

node_options persistent()
{
    node_options o;
    o.persistence = true;
    return o;
}

node_options skewable()
{
    node_options o;
    o.clock_shim = true;
    return o;
}

std::vector<node_config> reversed(std::vector<node_config> base)
{
    std::reverse(base.begin(), base.end());
    return base;
}

// As lock_checks' configs(), for nodes that are not one cluster.
std::vector<node_config> configs_of(const std::vector<const redis_node*>& nodes)
{
    std::vector<node_config> out;
    for (const auto* node : nodes) out.push_back(redlock::test::fast_reconnecting(node->url()));
    return out;
}

std::string joined(const std::vector<std::uint64_t>& tokens)
{
    std::ostringstream out;
    for (std::size_t i = 0; i < tokens.size(); ++i) out << (i ? " " : "") << tokens[i];
    return out.str();
}

long long count_ms(steady::duration d)
{
    return std::chrono::duration_cast<ms>(d).count();
}

// Every token above the one before it; otherwise the whole sequence is in the failure message.
void check_strictly_increasing(const std::vector<std::uint64_t>& tokens)
{
    for (std::size_t i = 1; i < tokens.size(); ++i)
        BOOST_TEST(tokens[i] > tokens[i - 1], "holder " << i << " got fencing token " << tokens[i]
                                                        << ", not above the previous holder's " << tokens[i - 1]
                                                        << "; all tokens: " << joined(tokens));
}

// The value of the lock's fence counter on each running node ("-" for a node that is down, "0" if unset).
std::string counters_text(const std::vector<redis_node*>& nodes, const std::string& key)
{
    std::ostringstream out;
    for (std::size_t i = 0; i < nodes.size(); ++i) {
        out << (i ? " " : "");
        if (!nodes[i]->running()) {
            out << "-";
            continue;
        }
        auto v = nodes[i]->cli({"GET", redlock::fence_counter_key(key)});
        out << (v.empty() ? "0" : v);
    }
    return out.str();
}

// The resource: a key written only through fenced writes, each of which also appends its token to a log
// kept at the resource (in the same script, so the log is exactly the sequence of accepted writes).
const std::string guard_key = "res:fence";
const std::string data_key = "res:data";
const std::string log_key = "res:log";

asio::awaitable<std::tuple<error_code, std::uint64_t>> fenced_set(const redlock::redis& resource, std::uint64_t token,
                                                                  const std::string& value)
{
    redlock::fenced_write w(guard_key, token);
    w.command("SET", data_key, {value});
    w.command("RPUSH", log_key, {token});
    co_return co_await redlock::async_fenced_write(resource, w, use_tuple);
}

// The tokens the resource accepted, in order.
std::vector<std::uint64_t> accepted_log(const redis_node& resource)
{
    std::vector<std::uint64_t> out;
    std::istringstream in(resource.cli({"LRANGE", log_key, "0", "-1"}));
    for (std::uint64_t t = 0; in >> t;) out.push_back(t);
    return out;
}

void check_never_decreases(const std::vector<std::uint64_t>& log)
{
    for (std::size_t i = 1; i < log.size(); ++i)
        BOOST_TEST(log[i] >= log[i - 1], "the resource accepted token " << log[i] << " after " << log[i - 1]
                                                                        << "; accepted: " << joined(log));
}

// What happens to a minority of nodes around one holder.
struct fault_step {
    int holder;              // index of the holder
    bool while_held;         // after its lock (before its release), or before its lock
    bool kill;               // kill, or restart
    std::vector<int> nodes;  // which
};

// Six fault rounds among `holders` holders on n nodes: every round takes down a different minority, in
// turns (a) down for three holders, (b) killed and restarted while one holder holds, (c) killed before a
// lock and restarted while a later holder holds.
std::vector<fault_step> fault_schedule(int n)
{
    const int minority = (n - 1) / 2;
    std::vector<fault_step> steps;
    for (int k = 0; k < 6; ++k) {
        std::vector<int> victims;
        for (int j = 0; j < minority; ++j) victims.push_back((k + 2 * j) % n);
        const int at = 5 + 9 * k;
        switch (k % 3) {
            case 0:
                steps.push_back({at, false, true, victims});
                steps.push_back({at + 3, false, false, victims});
                break;
            case 1:
                steps.push_back({at, true, true, victims});
                steps.push_back({at, true, false, victims});
                break;
            default:
                steps.push_back({at, false, true, victims});
                steps.push_back({at + 2, true, false, victims});
                break;
        }
    }
    return steps;
}

// A node's outcome in the last attempt `diag` describes.
redlock::node_outcome::result outcome_of(const redlock::diagnostics& diag, const redis_node& node)
{
    const auto port = ":" + std::to_string(node.port());
    for (const auto& o : diag.nodes())
        if (o.node.ends_with(port) || o.node.find(port + "/") != std::string::npos) return o.what;
    BOOST_FAIL("no outcome for port " << node.port());
    return redlock::node_outcome::result::pending;
}

std::string victims_text(const std::vector<int>& nodes)
{
    std::ostringstream out;
    for (std::size_t i = 0; i < nodes.size(); ++i) out << (i ? "," : "") << nodes[i];
    return out.str();
}

// `holders` successive holders of one lock over n persistent nodes, from three clients listing the nodes
// in different orders, with minorities killed (SIGKILL) and restarted along the way.
void successive_holders_across_kills(int n, int holders)
{
    cluster nodes(static_cast<std::size_t>(n), persistent());
    std::vector<redis_node*> all;
    for (int i = 0; i < n; ++i) all.push_back(&nodes[static_cast<std::size_t>(i)]);
    asio::io_context ctx;
    const auto base = configs(nodes);
    std::vector<std::unique_ptr<redlock::client>> clients;
    clients.push_back(std::make_unique<redlock::client>(ctx.get_executor(), base));
    clients.push_back(std::make_unique<redlock::client>(ctx.get_executor(), reversed(base)));
    clients.push_back(std::make_unique<redlock::client>(ctx.get_executor(), rotated(base, 1)));
    const auto schedule = fault_schedule(n);
    const std::string key = "fenced-" + std::to_string(n);
    const redlock::lock_options options{.ttl = 2000ms, .wait = 15'000ms, .node_timeout = 500ms, .fencing = true};

    std::vector<std::uint64_t> tokens;
    int releases_without_quorum = 0;
    const auto start = steady::now();
    run_coro(ctx, [&]() -> asio::awaitable<void> {
        // Returns whether it did anything.
        auto apply = [&](int holder, bool while_held) {
            bool acted = false;
            for (const auto& step : schedule) {
                if (step.holder != holder || step.while_held != while_held) continue;
                for (int v : step.nodes) {
                    if (step.kill)
                        all[static_cast<std::size_t>(v)]->kill();
                    else
                        all[static_cast<std::size_t>(v)]->restart();
                }
                BOOST_TEST_MESSAGE("n=" << n << " at " << count_ms(steady::now() - start) << " ms, holder " << holder
                                        << (while_held ? " (holding)" : " (before lock)") << ": "
                                        << (step.kill ? "killed" : "restarted") << " node(s) "
                                        << victims_text(step.nodes) << "; counters now " << counters_text(all, key));
                acted = true;
            }
            return acted;
        };
        for (int h = 0; h < holders; ++h) {
            apply(h, false);
            redlock::mutex m(*clients[static_cast<std::size_t>(h) % clients.size()], key, options);
            redlock::diagnostics diag;
            auto [ec, held] = co_await m.async_lock(diag, use_tuple);
            BOOST_REQUIRE_MESSAGE(!ec, "n=" << n << " holder " << h << ": " << ec.message() << ": " << diag.message()
                                            << "; tokens so far: " << joined(tokens));
            tokens.push_back(held.fencing_token());
            const bool hit_while_held = apply(h, true);
            auto [rec] = co_await held.async_release(use_tuple);
            if (hit_while_held && rec == error::no_quorum) {
                // The nodes killed under this holder may have been part of its quorum, and a node restarted a
                // moment ago may not be reconnected yet: too few nodes to release on. The TTL ends the lease.
                ++releases_without_quorum;
                BOOST_TEST_MESSAGE("n=" << n << " holder " << h << " release: " << rec.message());
            } else {
                BOOST_TEST(!rec, "n=" << n << " holder " << h << " release: " << rec.message());
            }
        }
    });
    BOOST_TEST_MESSAGE("n=" << n << ": " << holders << " holders in " << count_ms(steady::now() - start) << " ms ("
                            << releases_without_quorum
                            << " releases under a fault found no quorum); tokens: " << joined(tokens));
    BOOST_TEST_MESSAGE("n=" << n << ": counters at the end: " << counters_text(all, key));
    BOOST_REQUIRE(tokens.size() == static_cast<std::size_t>(holders));
    BOOST_TEST(tokens.front() >= 1u);
    check_strictly_increasing(tokens);
    // The last commit reached a quorum, and nothing set a counter above it.
    int at_last = 0;
    for (auto* node : all) {
        const auto v = node->cli({"GET", redlock::fence_counter_key(key)});
        const auto counter = v.empty() ? 0ull : std::stoull(v);
        BOOST_TEST(counter <= tokens.back());
        if (counter == tokens.back()) ++at_last;
    }
    BOOST_TEST(at_last >= n / 2 + 1, at_last << " nodes hold the last token " << tokens.back());
}

}  // namespace

BOOST_AUTO_TEST_CASE(tokens_increase_across_kill_and_restart_of_a_minority)
{
    successive_holders_across_kills(3, 60);
    successive_holders_across_kills(5, 60);
}

BOOST_AUTO_TEST_CASE(a_restart_that_loses_the_counter_on_a_minority_still_increases)
{
    // Nodes 0 and 1 keep their counters across restarts; node 2 comes back empty every time.
    redis_node keeper0(persistent());
    redis_node keeper1(persistent());
    redis_node forgetful;
    std::vector<redis_node*> all{&keeper0, &keeper1, &forgetful};
    asio::io_context ctx;
    const auto base = configs_of({&keeper0, &keeper1, &forgetful});
    redlock::client a(ctx.get_executor(), base);
    redlock::client b(ctx.get_executor(), reversed(base));
    const std::string key = "amnesia";
    const redlock::lock_options options{.ttl = 2000ms, .wait = 15'000ms, .node_timeout = 500ms, .fencing = true};
    constexpr int holders = 30;

    std::vector<std::uint64_t> tokens;
    int empty_after_restart = 0;
    run_coro(ctx, [&]() -> asio::awaitable<void> {
        for (int h = 0; h < holders; ++h) {
            // Every few holders node 2 forgets; sometimes one keeper is paused at the same time, so the next
            // quorum is exactly {the other keeper, the node that forgot}: the keeper must carry the count.
            const bool forget_before = h % 4 == 2;
            const bool forget_while_held = h % 4 == 0 && h > 0;
            redis_node* paused = (h % 8 == 2) ? &keeper0 : (h % 8 == 6) ? &keeper1 : nullptr;  // on forget_before
            if (forget_before) {
                forgetful.restart();
                if (forgetful.cli({"GET", redlock::fence_counter_key(key)}).empty()) ++empty_after_restart;
                if (paused) paused->pause();
            }
            redlock::mutex m(h % 2 ? b : a, key, options);
            redlock::diagnostics diag;
            auto [ec, held] = co_await m.async_lock(diag, use_tuple);
            BOOST_REQUIRE_MESSAGE(!ec, "holder " << h << ": " << ec.message() << ": " << diag.message()
                                                 << "; tokens so far: " << joined(tokens));
            tokens.push_back(held.fencing_token());
            if (paused) {
                // The quorum that granted is exactly the node that forgot and the keeper that is not paused.
                BOOST_TEST((outcome_of(diag, forgetful) == redlock::node_outcome::result::granted), "holder " << h);
                BOOST_TEST((outcome_of(diag, *paused) != redlock::node_outcome::result::granted), "holder " << h);
            }
            if (forget_while_held) {
                forgetful.restart();
                if (forgetful.cli({"GET", redlock::fence_counter_key(key)}).empty()) ++empty_after_restart;
            }
            auto [rec] = co_await held.async_release(use_tuple);
            BOOST_TEST(!rec, "holder " << h << " release: " << rec.message());
            if (paused) {
                paused->resume();
                BOOST_TEST_MESSAGE("holder " << h << " (token " << tokens.back()
                                             << ") was granted by the forgetful node and one keeper; counters "
                                             << counters_text(all, key));
            }
        }
    });
    BOOST_TEST_MESSAGE("tokens: " << joined(tokens) << "; node 2 came back empty " << empty_after_restart
                                  << " times; counters at the end: " << counters_text(all, key));
    BOOST_TEST(empty_after_restart >= 10);
    BOOST_REQUIRE(tokens.size() == static_cast<std::size_t>(holders));
    check_strictly_increasing(tokens);
}

BOOST_AUTO_TEST_CASE(fenced_writes_never_accept_a_stale_holder_under_clock_skew)
{
    // Nodes 0 and 1 (a majority) run their wall clocks 10x fast: a 2 s key expires there after ~200 ms.
    // Node 2 keeps real time. The resource is a separate plain Redis.
    cluster nodes(3, skewable());
    constexpr double rate = 10.0;
    nodes[0].set_clock(0, rate);
    nodes[1].set_clock(0, rate);
    redis_node resource;
    asio::io_context ctx;
    // Without client tracking, which would tell A at once that its keys expired on the fast nodes and declare its
    // lease lost (lease_tracking_test): this test needs the overlap that fencing, not tracking, must make harmless
    // (tracking narrows it to a round trip, it cannot close it).
    auto base = configs(nodes);
    for (auto& c : base) c.track_keys = false;
    redlock::client a(ctx.get_executor(), base);
    redlock::client b(ctx.get_executor(), reversed(base));
    redlock::redis res(ctx.get_executor(), redlock::parse_url(resource.url()));
    const std::string key = "kleppmann";
    // A: no watchdog, so A's only idea of its lease is its local validity (~2 s).
    const redlock::lock_options options{.ttl = 2000ms, .wait = 5000ms, .node_timeout = 500ms, .fencing = true};
    constexpr int rounds = 8;
    // A round counts only if its precondition held: both leases valid at once. On a slow machine (TSan) A's
    // validity is sometimes over by the time B is granted; such a round is run again, a bounded number of times.
    constexpr int max_repeats = 8;

    int both_valid = 0;
    int repeated = 0;
    std::vector<std::uint64_t> accepted;  // as the writers saw it
    run_coro(ctx, [&]() -> asio::awaitable<void> {
        co_await res.async_connect(asio::use_awaitable);
        redlock::mutex ma(a, key, options);
        redlock::mutex mb(b, key, options);
        for (int round = 0; round < rounds;) {
            redlock::diagnostics diag;
            auto [ea, la] = co_await ma.async_lock(diag, use_tuple);
            BOOST_REQUIRE_MESSAGE(!ea, "round " << round << ", A: " << ea.message() << ": " << diag.message());
            const auto a_granted = steady::now();
            // Wait until A's keys are gone from the fast nodes (read through redis-cli: EXISTS expires them).
            bool expired = false;
            while (!expired && steady::now() - a_granted < 5s) {
                expired = nodes[0].cli({"EXISTS", key}) == "0" && nodes[1].cli({"EXISTS", key}) == "0";
                if (!expired) co_await sleep_for(5ms);
            }
            BOOST_REQUIRE_MESSAGE(expired, "round " << round << ": A's keys did not expire on the fast nodes");
            BOOST_TEST(nodes[2].cli({"GET", key}) == la.token());  // A still holds the real-time node

            auto [eb, lb] = co_await mb.async_lock(diag, use_tuple);
            BOOST_REQUIRE_MESSAGE(!eb, "round " << round << ", B: " << eb.message() << ": " << diag.message());
            const auto gap = steady::now() - a_granted;
            const auto a_left = la.validity();
            const auto b_left = lb.validity();
            const bool both = a_left > 0ms && b_left > 0ms && !la.lost() && !lb.lost();
            const auto ta = la.fencing_token();
            const auto tb = lb.fencing_token();
            std::ostringstream line;
            line << "round " << round << ": A token " << ta << ", B token " << tb << " " << count_ms(gap)
                 << " ms later; validity left A " << a_left.count() << " ms, B " << b_left.count() << " ms";
            BOOST_TEST_MESSAGE(line.str());
            BOOST_TEST(tb > ta, "round " << round << ": B's token " << tb << " is not above A's " << ta);
            if (!both) {
                // The precondition did not hold (mutual exclusion did not break): nothing to test; run it again.
                BOOST_TEST_MESSAGE("round " << round << ": A's and B's validities did not overlap; repeating it");
                co_await la.async_release(use_tuple);
                co_await lb.async_release(use_tuple);
                BOOST_REQUIRE_MESSAGE(++repeated <= max_repeats, "mutual exclusion did not break in "
                                                                     << repeated << " rounds; the test needs " << rounds
                                                                     << " where it does");
                continue;
            }
            ++both_valid;

            const std::string a_value = "A" + std::to_string(round);
            const std::string b_value = "B" + std::to_string(round);
            if (round % 2 == 0) {
                // B writes first; A, who still believes it holds the lock, comes second and is refused.
                auto [wb, rb] = co_await fenced_set(res, tb, b_value);
                BOOST_TEST(!wb, "round " << round << ", B's write: " << wb.message());
                BOOST_TEST(rb == tb);
                if (!wb) accepted.push_back(tb);
                auto [wa, ra] = co_await fenced_set(res, ta, a_value);
                BOOST_TEST(wa == error::stale_token, "round " << round << ", A's write: " << wa.message());
                BOOST_TEST(ra == tb, "round " << round << ": the refusal reports " << ra << ", B's token is " << tb);
                if (!wa) accepted.push_back(ta);
            } else {
                // A writes first (accepted: nobody newer wrote yet), then B, then A again (refused).
                auto [wa, ra] = co_await fenced_set(res, ta, a_value);
                BOOST_TEST(!wa, "round " << round << ", A's first write: " << wa.message());
                BOOST_TEST(ra == ta);
                if (!wa) accepted.push_back(ta);
                auto [wb, rb] = co_await fenced_set(res, tb, b_value);
                BOOST_TEST(!wb, "round " << round << ", B's write: " << wb.message());
                BOOST_TEST(rb == tb);
                if (!wb) accepted.push_back(tb);
                auto [wa2, ra2] = co_await fenced_set(res, ta, a_value + "-again");
                BOOST_TEST(wa2 == error::stale_token, "round " << round << ", A's second write: " << wa2.message());
                BOOST_TEST(ra2 == tb);
                if (!wa2) accepted.push_back(ta);
            }
            BOOST_TEST(resource.cli({"GET", data_key}) == b_value);
            BOOST_TEST(resource.cli({"GET", guard_key}) == std::to_string(tb));

            auto [ra_ec] = co_await la.async_release(use_tuple);
            auto [rb_ec] = co_await lb.async_release(use_tuple);
            BOOST_TEST_MESSAGE("round " << round << ": A's release: " << (ra_ec ? ra_ec.message() : "ok")
                                        << "; B's release: " << (rb_ec ? rb_ec.message() : "ok"));
            ++round;
        }
    });
    const auto log = accepted_log(resource);
    BOOST_TEST_MESSAGE("mutual exclusion broke in " << both_valid << " rounds (" << repeated
                                                    << " repeated); tokens the resource accepted: " << joined(log));
    BOOST_TEST(both_valid == rounds);
    check_never_decreases(log);
    BOOST_TEST((log == accepted), "resource log: " << joined(log) << "; writers saw: " << joined(accepted));
    BOOST_TEST(log.size() == static_cast<std::size_t>(rounds / 2 + 2 * (rounds - rounds / 2)));
}

BOOST_AUTO_TEST_CASE(a_paused_holder_process_is_fenced_out)
{
    // Holder A is this process. It checks its lease, then stalls (its thread blocks, so its io_context runs
    // nothing: a GC pause, a page fault storm, SIGSTOP) for longer than the TTL. Meanwhile holder B, another
    // process (`redlock exec --fencing`), takes the lock and writes to the resource with its own script.
    // When A wakes up it writes what it had prepared, and the resource refuses it.
    cluster nodes(3);
    redis_node resource;
    const auto dir = redlock::test::make_temp_dir("redlock-fencing-");
    asio::io_context ctx;
    redlock::client a(ctx.get_executor(), configs(nodes));
    redlock::redis res(ctx.get_executor(), redlock::parse_url(resource.url()));
    const std::string key = "stalled";

    // B's write: the same check as fenced_write's script (tokens compared as decimal strings), then
    // SET data, RPUSH log, SET guard. Replies {1, token} or {0, the guard's newer token}.
    const std::string b_script = R"lua(
local last = redis.call('GET', KEYS[1]) or '0'
local t = ARGV[1]
if #t < #last or (#t == #last and t < last) then return {0, last} end
redis.call('SET', KEYS[2], ARGV[2])
redis.call('RPUSH', KEYS[3], t)
redis.call('SET', KEYS[1], t)
return {1, t}
)lua";
    const auto b_token_file = dir + "/b-token";
    const auto b_reply_file = dir + "/b-reply";
    const auto b_output = dir + "/b-output";
    const auto redis_cli = redlock::test::cli_program();

    std::uint64_t ta = 0;
    redlock::lease la;
    run_coro(ctx, [&]() -> asio::awaitable<void> {
        co_await res.async_connect(asio::use_awaitable);
        redlock::mutex ma(a, key, {.ttl = 500ms, .node_timeout = 200ms, .fencing = true});
        la = co_await ma.async_lock(asio::use_awaitable);
        ta = la.fencing_token();
        auto [w1, r1] = co_await fenced_set(res, ta, "A-before");
        BOOST_TEST(!w1, "A's first write: " << w1.message());
        BOOST_TEST(r1 == ta);
    });
    BOOST_REQUIRE(ta != 0u);

    const pid_t b = redlock::test::spawn_process(
        {.args =
             {REDLOCK_CLI_PATH,
              "exec",
              "--nodes",
              redlock::test::comma_joined(nodes.urls()),
              "--key",
              key,
              "--ttl",
              "5s",
              "--wait",
              "20s",
              "--fencing",
              "-v",
              "--",
              "sh",
              "-c",
              "printf %s \"$REDLOCK_FENCING_TOKEN\" > \"$1\" && \"$2\" -p \"$3\" EVAL \"$4\" 3 \"$5\" \"$6\" \"$7\" "
              "\"$REDLOCK_FENCING_TOKEN\" B > \"$8\"",
              "sh",
              b_token_file,
              redis_cli,
              std::to_string(resource.port()),
              b_script,
              guard_key,
              data_key,
              log_key,
              b_reply_file},
         .env = redlock::test::environment_with({}),
         .output_file = b_output});

    // A checks its lease (still valid), and then the process stalls until B is done.
    const auto a_left_before = la.validity();
    const auto stall_start = steady::now();
    int status = 0;
    const bool exited = redlock::test::wait_for_exit(b, 30s, &status);
    if (!exited) redlock::test::stop_process(b, 1s);
    const auto stalled = steady::now() - stall_start;
    BOOST_REQUIRE_MESSAGE(exited, "B did not finish: " << redlock::test::file_contents(b_output));
    BOOST_TEST(redlock::test::exit_status(status) == 0, "B: " << redlock::test::file_contents(b_output));
    BOOST_TEST(a_left_before > 0ms);
    const auto tb_text = redlock::test::file_contents(b_token_file);
    const std::uint64_t tb = tb_text.empty() ? 0 : std::stoull(tb_text);
    BOOST_TEST(tb > ta, "B's token " << tb << ", A's " << ta);
    BOOST_TEST(redlock::test::file_contents(b_reply_file) == "1\n" + std::to_string(tb) + "\n",
               "B's write replied: " << redlock::test::file_contents(b_reply_file));

    run_coro(ctx, [&]() -> asio::awaitable<void> {
        // A wakes up and carries on where it was: the write it checked its lease for.
        auto [w2, r2] = co_await fenced_set(res, ta, "A-after-the-stall");
        BOOST_TEST(w2 == error::stale_token, "A's write after the stall: " << w2.message());
        BOOST_TEST(r2 == tb);
        auto [rec] = co_await la.async_release(use_tuple);
        BOOST_TEST_MESSAGE("A: token " << ta << ", validity " << a_left_before.count() << " ms before a stall of "
                                       << count_ms(stalled) << " ms; B: token " << tb
                                       << "; A's write after it: " << w2.message() << " (resource at " << r2
                                       << "); A's release: " << (rec ? rec.message() : "ok"));
    });
    BOOST_TEST(resource.cli({"GET", data_key}) == "B");
    const auto log = accepted_log(resource);
    BOOST_TEST((log == std::vector<std::uint64_t>{ta, tb}), "accepted: " << joined(log));
    std::filesystem::remove_all(dir);
}
