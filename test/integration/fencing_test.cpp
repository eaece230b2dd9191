// Fencing tokens on 1, 3 and 5 real nodes, and fenced writes on a resource kept in Redis.
#include <redlock/redlock.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <common/run_coro.hpp>
#include <common/servers/lock_checks.hpp>
#include <common/servers/redis_node.hpp>
#include <common/servers/redis_rig.hpp>
#include <set>

namespace asio = boost::asio;
namespace data = boost::unit_test::data;
using namespace std::chrono_literals;
using redlock::error;
using redlock::fenced_write;
using redlock::test::cluster;
using redlock::test::configs;
using redlock::test::redis_rig;
using redlock::test::rotated;
using redlock::test::run_coro;
using redlock::test::sleep_for;
using steady = std::chrono::steady_clock;
constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);

namespace {

const redlock::lock_options fenced{.ttl = 5000ms, .node_timeout = 500ms, .fencing = true};

// A plain connection to a node that keeps a resource.
// The Redis that keeps the resource: one deployment.
redlock::redis resource_store(asio::io_context& ctx, const redlock::test::redis_node& node)
{
    return redlock::redis(ctx.get_executor(), redlock::parse_url(node.url()));
}

}  // namespace

BOOST_DATA_TEST_CASE(tokens_strictly_increase_over_successive_holders, data::make({1, 3, 5}), n)
{
    cluster nodes(n);
    asio::io_context ctx;
    std::vector<std::unique_ptr<redlock::client>> clients;
    for (std::size_t i = 0; i < 3; ++i)
        clients.push_back(std::make_unique<redlock::client>(ctx.get_executor(), rotated(configs(nodes), i)));
    run_coro(ctx, [&]() -> asio::awaitable<void> {
        for (auto& c : clients) co_await c->async_connect(asio::use_awaitable);
        std::vector<std::uint64_t> tokens;
        for (int i = 0; i < 30; ++i) {
            redlock::mutex m(*clients[static_cast<std::size_t>(i) % clients.size()], "fenced:job", fenced);
            auto held = co_await m.async_lock(asio::use_awaitable);
            tokens.push_back(held.fencing_token());
            co_await held.async_release(asio::use_awaitable);
        }
        BOOST_TEST(tokens.front() == 1u);
        for (std::size_t i = 1; i < tokens.size(); ++i) BOOST_TEST(tokens[i] > tokens[i - 1], "holder " << i);
        // Every node that saw the last commit holds the last token; none holds more.
        const auto last = std::to_string(tokens.back());
        std::size_t at_last = 0;
        for (std::size_t i = 0; i < nodes.size(); ++i) {
            const auto counter = nodes[i].cli({"GET", redlock::fence_counter_key("fenced:job")});
            at_last += counter == last ? 1 : 0;
            BOOST_TEST(std::stoull(counter) <= tokens.back());
        }
        BOOST_TEST(at_last >= clients.front()->quorum());
    });
}

BOOST_DATA_TEST_CASE(contenders_never_share_a_token, data::make({1, 3}), n)
{
    cluster nodes(n);
    asio::io_context ctx;
    std::vector<std::unique_ptr<redlock::client>> clients;
    for (std::size_t i = 0; i < 4; ++i)
        clients.push_back(std::make_unique<redlock::client>(ctx.get_executor(), rotated(configs(nodes), i)));
    std::vector<std::uint64_t> tokens;
    std::size_t running = clients.size();
    for (auto& c : clients) {
        asio::co_spawn(
            ctx,
            [&tokens, client = c.get()]() -> asio::awaitable<void> {
                co_await client->async_connect(asio::use_awaitable);
                redlock::mutex m(*client, "contended",
                                 {.ttl = 100ms, .wait = 5000ms, .node_timeout = 50ms, .fencing = true});
                std::vector<redlock::lease> left_to_expire;  // destroying a lease would release it
                for (int i = 0; i < 10; ++i) {
                    auto [ec, held] = co_await m.async_lock(use_tuple);
                    if (ec) continue;
                    tokens.push_back(held.fencing_token());
                    // Every other lease is left to expire: grants then race with expiry, not only releases.
                    if (i % 2 == 0)
                        co_await held.async_release(use_tuple);
                    else
                        left_to_expire.push_back(std::move(held));
                }
            },
            [&](std::exception_ptr e) {
                if (e) std::rethrow_exception(e);
                --running;
            });
    }
    run_coro(ctx, [&]() -> asio::awaitable<void> {
        while (running > 0) co_await sleep_for(10ms);
    });
    const std::set<std::uint64_t> distinct(tokens.begin(), tokens.end());
    BOOST_TEST(tokens.size() >= 20u);
    BOOST_TEST(distinct.size() == tokens.size());
    BOOST_TEST(distinct.count(0) == 0u);
}

BOOST_AUTO_TEST_CASE(the_token_stays_the_same_across_extensions_and_plain_locks_have_none)
{
    redis_rig rig(3);
    rig.run([&]() -> asio::awaitable<void> {
        co_await rig.client().async_connect(asio::use_awaitable);
        redlock::mutex m(rig.client(), "kept",
                         {.ttl = 600ms, .node_timeout = 200ms, .watchdog = true, .fencing = true});
        auto held = co_await m.async_lock(asio::use_awaitable);
        const auto token = held.fencing_token();
        BOOST_TEST(token == 1u);
        co_await sleep_for(1000ms);  // several watchdog extensions
        BOOST_TEST(!held.lost());
        BOOST_TEST(held.fencing_token() == token);
        for (std::size_t i = 0; i < rig.nodes.size(); ++i)
            BOOST_TEST(rig.nodes[i].cli({"GET", redlock::fence_counter_key("kept")}) == std::to_string(token));
        co_await held.async_release(asio::use_awaitable);

        redlock::mutex plain(rig.client(), "kept", {.ttl = 600ms, .node_timeout = 200ms});
        auto unfenced = co_await plain.async_lock(asio::use_awaitable);
        BOOST_TEST(unfenced.fencing_token() == 0u);
        co_await unfenced.async_release(asio::use_awaitable);
        BOOST_TEST(rig.nodes[0].cli({"GET", redlock::fence_counter_key("kept")}) == std::to_string(token));
    });
}

BOOST_DATA_TEST_CASE(a_multi_key_token_is_above_the_tokens_of_each_key, data::make({1, 3}), n)
{
    redis_rig rig(n);
    const std::vector<std::string> both_keys{"{acct}:b", "{acct}:a"};
    rig.run([&]() -> asio::awaitable<void> {
        co_await rig.client().async_connect(asio::use_awaitable);
        std::uint64_t a_token = 0;
        for (int i = 0; i < 3; ++i) {
            auto held = co_await redlock::mutex(rig.client(), "{acct}:a", fenced).async_lock(asio::use_awaitable);
            a_token = held.fencing_token();
            co_await held.async_release(asio::use_awaitable);
        }
        auto b = co_await redlock::mutex(rig.client(), "{acct}:b", fenced).async_lock(asio::use_awaitable);
        BOOST_TEST(b.fencing_token() == 1u);
        co_await b.async_release(asio::use_awaitable);
        auto both = co_await redlock::mutex(rig.client(), both_keys, fenced).async_lock(asio::use_awaitable);
        BOOST_TEST(both.fencing_token() == a_token + 1);
        co_await both.async_release(asio::use_awaitable);
        auto again = co_await redlock::mutex(rig.client(), "{acct}:b", fenced).async_lock(asio::use_awaitable);
        BOOST_TEST(again.fencing_token() == a_token + 2);
        co_await again.async_release(asio::use_awaitable);
    });
}

BOOST_AUTO_TEST_CASE(counters_above_the_grants_push_the_token_up)
{
    // A node's counter may be ahead of the others (a commit that reached it alone): the token goes above it.
    // Node 2 is held by another owner, so the quorum is nodes 0 and 1 and node 1's grant (counter 41) is part
    // of every decision: phase 1 must take its counter into account.
    redis_rig rig(3);
    const auto counter = redlock::fence_counter_key("ahead");
    rig.nodes[1].cli({"SET", counter, "41"});
    rig.nodes[2].cli({"SET", "ahead", "other-owner", "PX", "60000"});
    rig.run([&]() -> asio::awaitable<void> {
        co_await rig.client().async_connect(asio::use_awaitable);
        redlock::mutex m(rig.client(), "ahead", {.ttl = 5000ms, .node_timeout = 500ms, .fencing = true});
        auto held = co_await m.async_lock(asio::use_awaitable);
        BOOST_TEST(held.fencing_token() == 42u);
        // The commit moved the quorum's counters to the token; node 2 (not granted) kept its own.
        BOOST_TEST(rig.nodes[0].cli({"GET", counter}) == "42");
        BOOST_TEST(rig.nodes[1].cli({"GET", counter}) == "42");
        BOOST_TEST(rig.nodes[2].cli({"EXISTS", counter}) == "0");
        co_await held.async_release(asio::use_awaitable);
        // The next holder goes above it.
        rig.nodes[2].cli({"DEL", "ahead"});
        auto next = co_await m.async_lock(asio::use_awaitable);
        BOOST_TEST(next.fencing_token() == 43u);
        co_await next.async_release(asio::use_awaitable);
    });
}

BOOST_DATA_TEST_CASE(a_counter_that_is_not_a_number_fails_the_lock_with_the_reason, data::make({1, 3}), n)
{
    redis_rig rig(n);
    for (std::size_t i = 0; i < rig.nodes.size(); ++i)
        rig.nodes[i].cli({"SET", redlock::fence_counter_key("broken"), "x1"});
    rig.run([&]() -> asio::awaitable<void> {
        co_await rig.client().async_connect(asio::use_awaitable);
        redlock::mutex m(rig.client(), "broken", {.ttl = 5000ms, .wait = 0ms, .node_timeout = 500ms, .fencing = true});
        redlock::diagnostics diag;
        auto [ec, held] = co_await m.async_lock(diag, use_tuple);
        BOOST_TEST(ec == error::no_quorum);
        BOOST_TEST(!held);
        const auto count = static_cast<std::size_t>(n);
        BOOST_REQUIRE(diag.nodes().size() == count);
        // Decided once too many failed: a node may still be pending then (which one depends on timing), but
        // every node that answered failed with the reason, and enough did to rule out a quorum.
        std::size_t failed = 0;
        for (const auto& node : diag.nodes()) {
            if (node.what == redlock::node_outcome::result::pending) continue;
            ++failed;
            BOOST_TEST((node.what == redlock::node_outcome::result::failed));
            BOOST_TEST(node.message.find("not a number") != std::string::npos, node.message);
        }
        BOOST_TEST(failed > count - (count / 2 + 1));
        co_await sleep_for(100ms);  // the failed attempt's release reaches the nodes
        for (std::size_t i = 0; i < rig.nodes.size(); ++i) BOOST_TEST(rig.nodes[i].cli({"EXISTS", "broken"}) == "0");
    });
}

BOOST_AUTO_TEST_CASE(fenced_writes_apply_in_order_and_refuse_older_tokens)
{
    redlock::test::redis_node store;
    asio::io_context ctx;
    auto resource = resource_store(ctx, store);
    run_coro(ctx, [&]() -> asio::awaitable<void> {
        co_await resource.async_connect(asio::use_awaitable);
        fenced_write first("{acct:7}:guard", 5);
        first.command("SET", "{acct:7}:balance", {"100"}).command("HSET", "{acct:7}:meta", {"by", "five", "n", 1});
        auto [ec, at] = co_await redlock::async_fenced_write(resource, first, use_tuple);
        BOOST_TEST(!ec, ec.message());
        BOOST_TEST(at == 5u);
        BOOST_TEST(store.cli({"GET", "{acct:7}:balance"}) == "100");
        BOOST_TEST(store.cli({"HGET", "{acct:7}:meta", "by"}) == "five");
        BOOST_TEST(store.cli({"GET", "{acct:7}:guard"}) == "5");

        // The same holder again: equal tokens pass.
        fenced_write again("{acct:7}:guard", 5);
        again.command("INCRBY", "{acct:7}:balance", {1});
        std::tie(ec, at) = co_await redlock::async_fenced_write(resource, again, use_tuple);
        BOOST_TEST(!ec);
        BOOST_TEST(store.cli({"GET", "{acct:7}:balance"}) == "101");

        // A newer holder, then the older one: refused, with the newer token, and nothing written.
        fenced_write newer("{acct:7}:guard", 9);
        newer.command("SET", "{acct:7}:balance", {"900"});
        std::tie(ec, at) = co_await redlock::async_fenced_write(resource, newer, use_tuple);
        BOOST_TEST(!ec);
        std::tie(ec, at) = co_await redlock::async_fenced_write(resource, again, use_tuple);
        BOOST_TEST(ec == error::stale_token);
        BOOST_TEST(at == 9u);
        BOOST_TEST(store.cli({"GET", "{acct:7}:balance"}) == "900");
        BOOST_TEST(store.cli({"GET", "{acct:7}:guard"}) == "9");

        // DEL with no further arguments.
        fenced_write removal("{acct:7}:guard", 10);
        removal.command("DEL", "{acct:7}:meta");
        std::tie(ec, at) = co_await redlock::async_fenced_write(resource, removal, use_tuple);
        BOOST_TEST(!ec);
        BOOST_TEST(store.cli({"EXISTS", "{acct:7}:meta"}) == "0");

        // Pipelined with other commands on the caller's own request.
        fenced_write deposit("{acct:7}:guard", 10);
        deposit.command("INCRBY", "{acct:7}:balance", {50});
        auto req = deposit.to_request();
        req.push("GET", "{acct:7}:balance");
        redlock::response resp;
        auto [xec] = co_await resource.async_exec(req, resp, "{acct:7}:guard", use_tuple);
        BOOST_TEST(!xec);
        BOOST_REQUIRE(resp.size() == 2u);
        std::tie(ec, at) = fenced_write::outcome(resp[0]);
        BOOST_TEST(!ec);
        BOOST_TEST(at == 10u);
        BOOST_TEST(resp[1].text == "950");
    });
}

BOOST_AUTO_TEST_CASE(fenced_write_compares_tokens_beyond_double_precision_exactly)
{
    // 2^53 + 1 and 2^53 are the same Lua number; the script compares the decimal strings.
    redlock::test::redis_node store;
    store.cli({"SET", "big:guard", "9007199254740993"});
    asio::io_context ctx;
    auto resource = resource_store(ctx, store);
    run_coro(ctx, [&]() -> asio::awaitable<void> {
        co_await resource.async_connect(asio::use_awaitable);
        fenced_write w("big:guard", 9007199254740992u);
        w.command("SET", "big", {"stale"});
        auto [ec, at] = co_await redlock::async_fenced_write(resource, w, use_tuple);
        BOOST_TEST(ec == error::stale_token);
        BOOST_TEST(at == 9007199254740993u);
        fenced_write top("big:guard", 9223372036854775807u);
        top.command("SET", "big", {"newest"});
        std::tie(ec, at) = co_await redlock::async_fenced_write(resource, top, use_tuple);
        BOOST_TEST(!ec);
        BOOST_TEST(store.cli({"GET", "big"}) == "newest");
    });
}

BOOST_AUTO_TEST_CASE(fenced_write_errors_are_clear)
{
    redlock::test::redis_node store;
    store.cli({"LPUSH", "a:list", "x"});
    store.cli({"SET", "odd:guard", "abc"});
    asio::io_context ctx;
    auto resource = resource_store(ctx, store);
    run_coro(ctx, [&]() -> asio::awaitable<void> {
        co_await resource.async_connect(asio::use_awaitable);
        // Bad input, before any I/O.
        fenced_write unfenced("g", 0), no_command("g", 1), no_guard("", 1);
        unfenced.command("SET", "k", {"v"});
        no_guard.command("SET", "k", {"v"});
        BOOST_TEST(unfenced.invalid().find("without lock_options::fencing") != std::string::npos);
        BOOST_TEST(no_command.invalid() == "a fenced write needs a command");
        BOOST_TEST(no_guard.invalid() == "the guard key is empty");
        const auto requests = resource.get_usage().requests;
        for (const auto* w : {&unfenced, &no_command, &no_guard}) {
            auto [ec, at] = co_await redlock::async_fenced_write(resource, *w, use_tuple);
            BOOST_TEST(ec == error::invalid_argument);
            BOOST_TEST(at == 0u);
        }
        BOOST_TEST(resource.get_usage().requests == requests);

        // A command that fails: the error reply, and the guard does not advance.
        fenced_write wrong("l:guard", 3);
        wrong.command("SET", "l:first", {"1"}).command("HSET", "a:list", {"f", "v"});
        auto [ec, at] = co_await redlock::async_fenced_write(resource, wrong, use_tuple);
        BOOST_TEST(ec == error::server_error);
        BOOST_TEST(store.cli({"EXISTS", "l:guard"}) == "0");

        // A guard that is not a number.
        fenced_write odd("odd:guard", 3);
        odd.command("SET", "odd", {"v"});
        std::tie(ec, at) = co_await redlock::async_fenced_write(resource, odd, use_tuple);
        BOOST_TEST(ec == error::server_error);
        BOOST_TEST(store.cli({"EXISTS", "odd"}) == "0");
    });
}

BOOST_DATA_TEST_CASE(a_suspended_holder_is_fenced_out_by_the_next_one, data::make({1, 3, 5}), n)
{
    // Kleppmann's scenario: A holds a short lease without a watchdog and stalls (a GC pause, a swapped-out
    // process: here a coroutine that sleeps) past its expiry; B acquires and writes; A wakes up and writes.
    cluster nodes(n);
    redlock::test::redis_node store;
    asio::io_context ctx;
    redlock::client a(ctx.get_executor(), rotated(configs(nodes), 0));
    redlock::client b(ctx.get_executor(), rotated(configs(nodes), 1));
    auto resource = resource_store(ctx, store);
    run_coro(ctx, [&]() -> asio::awaitable<void> {
        co_await a.async_connect(asio::use_awaitable);
        co_await b.async_connect(asio::use_awaitable);
        co_await resource.async_connect(asio::use_awaitable);
        redlock::mutex ma(a, "file:report", {.ttl = 300ms, .node_timeout = 100ms, .fencing = true});
        auto held_a = co_await ma.async_lock(asio::use_awaitable);
        const auto start = steady::now();

        co_await sleep_for(500ms);             // A stalls past its TTL
        BOOST_TEST(held_a.validity() == 0ms);  // A could know, if it looked; a paused process does not look

        redlock::mutex mb(b, "file:report", {.ttl = 5000ms, .wait = 2000ms, .node_timeout = 100ms, .fencing = true});
        auto held_b = co_await mb.async_lock(asio::use_awaitable);
        BOOST_TEST(held_b.fencing_token() > held_a.fencing_token());
        fenced_write wb("{file:report}:guard", held_b.fencing_token());
        wb.command("SET", "{file:report}:body", {"written by B"});
        auto [ec_b, at_b] = co_await redlock::async_fenced_write(resource, wb, use_tuple);
        BOOST_TEST(!ec_b);

        fenced_write wa("{file:report}:guard", held_a.fencing_token());
        wa.command("SET", "{file:report}:body", {"written by A"});
        auto [ec_a, at_a] = co_await redlock::async_fenced_write(resource, wa, use_tuple);
        BOOST_TEST(ec_a == error::stale_token);
        BOOST_TEST(at_a == held_b.fencing_token());
        BOOST_TEST(store.cli({"GET", "{file:report}:body"}) == "written by B");
        BOOST_TEST((steady::now() - start < 5s));
        co_await held_b.async_release(asio::use_awaitable);
    });
}
