// The watchdog's batched extensions on real nodes: many leases held by one client stay held, their keys'
// TTLs are renewed, and the nodes see one script call per batch rather than one per lease.
#include <redlock/redlock.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/test/data/monomorphic.hpp>
#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>

#include <common/servers/lock_checks.hpp>
#include <common/servers/redis_rig.hpp>
#include <functional>

namespace asio = boost::asio;
using namespace std::chrono_literals;
using redlock::test::redis_rig;
using redlock::test::sleep_for;
constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);

namespace {
// Locks `prefix0`, `prefix1`... with the watchdog (ttl 900 ms: extended every 300 ms) into `held`.
asio::awaitable<void> take_leases(redlock::client& c, std::string prefix, int count, std::vector<redlock::lease>& held)
{
    for (int k = 0; k < count; ++k) {
        redlock::mutex m(c, prefix + std::to_string(k), {.ttl = 900ms, .watchdog = true});
        auto [ec, l] = co_await m.async_lock(use_tuple);
        BOOST_TEST_REQUIRE(!ec);
        held.push_back(std::move(l));
    }
}
}  // namespace

// With client tracking (the default) a batch carries at most 32 leases of one key: Redis 7.0 remembers every key a
// script names at each read inside it, so a batch of k leases costs the server k * k tracking-table insertions (248
// leases: 6 ms of the server per call; 100,000 leases held saturated it and were lost). Without tracking, batches
// are as large as the leases due together.
BOOST_DATA_TEST_CASE(many_leases_stay_held_with_one_script_call_per_batch, boost::unit_test::data::make({true, false}),
                     tracked)
{
    constexpr int leases = 300;
    redis_rig rig(3, 0);
    auto configs = redlock::test::configs(rig.nodes);
    for (auto& c : configs) c.track_keys = tracked;
    redlock::client client(rig.ctx.get_executor(), configs);
    std::vector<redlock::lease> held;
    rig.run([&]() -> asio::awaitable<void> {
        co_await take_leases(client, "batch:", leases, held);
        for (std::size_t i = 0; i < rig.nodes.size(); ++i) rig.nodes[i].cli({"CONFIG", "RESETSTAT"});
        co_await sleep_for(2000ms);  // more than two TTLs: every lease lives on extensions alone
    });
    for (std::size_t i = 0; i < rig.nodes.size(); ++i) {
        const auto extensions = rig.nodes[i].command_stat("pexpire");
        const auto calls = rig.nodes[i].command_stat("evalsha");
        BOOST_TEST(extensions >= 2L * leases);  // each lease extended at least every 300 ms
        BOOST_TEST(calls * 10 <= extensions, calls << " script calls for " << extensions << " extensions");
        if (tracked)
            BOOST_TEST(extensions <= calls * 32, calls << " script calls for " << extensions << " extensions");
        else
            BOOST_TEST(extensions > calls * 16, "untracked batches should be larger: " << calls << " calls");
        for (int k = 0; k < leases; k += 37) {
            const auto pttl = std::stol(rig.nodes[i].cli({"PTTL", "batch:" + std::to_string(k)}));
            BOOST_TEST(pttl > 0);
        }
    }
    for (const auto& l : held) BOOST_TEST(!l.lost());
}

// The cap counts keys: a lease of 8 keys is 8 of the script's keys, and 32 leases of 8 keys would cost the server what
// 256 leases of one did.
BOOST_AUTO_TEST_CASE(a_tracked_batch_counts_the_keys_of_its_leases)
{
    constexpr int leases = 60;
    constexpr int keys_per_lease = 8;
    redis_rig rig(1);
    std::vector<redlock::lease> held;
    rig.run([&]() -> asio::awaitable<void> {
        for (int k = 0; k < leases; ++k) {
            std::vector<std::string> keys;
            for (int j = 0; j < keys_per_lease; ++j)
                keys.push_back("multi:" + std::to_string(k) + ":" + std::to_string(j));
            redlock::mutex m(rig.client(), keys, {.ttl = 900ms, .watchdog = true});
            auto [ec, l] = co_await m.async_lock(use_tuple);
            BOOST_TEST_REQUIRE(!ec);
            held.push_back(std::move(l));
        }
        rig.nodes[0].cli({"CONFIG", "RESETSTAT"});
        co_await sleep_for(2000ms);
    });
    const auto extensions = rig.nodes[0].command_stat("pexpire");  // one per key
    const auto calls = rig.nodes[0].command_stat("evalsha");
    BOOST_TEST(extensions >= 2L * leases * keys_per_lease);
    BOOST_TEST(extensions <= calls * 32, calls << " script calls for " << extensions << " key extensions");
    for (const auto& l : held) BOOST_TEST(!l.lost());
}

// A key of another type (someone replaced a lock key by a hash) is "not ours" for its own lease only: the
// other leases of its batch are still extended.
BOOST_AUTO_TEST_CASE(a_key_of_another_type_fails_its_lease_only)
{
    constexpr int leases = 20;
    redis_rig rig(3);
    std::vector<redlock::lease> held;
    rig.run([&]() -> asio::awaitable<void> {
        co_await take_leases(rig.client(), "typed:", leases, held);
        for (std::size_t i = 0; i < rig.nodes.size(); ++i) {
            rig.nodes[i].cli({"DEL", "typed:7"});
            rig.nodes[i].cli({"HSET", "typed:7", "field", "value"});
        }
        co_await sleep_for(1500ms);
    });
    for (int k = 0; k < leases; ++k) BOOST_TEST(held[static_cast<std::size_t>(k)].lost() == (k == 7), "typed:" << k);
}

// A node timeout counts from a request's submission: a round's batches sent all at once queued on the node past
// it (20,000 tracked leases on one node: 6,000 to 15,000 failed extensions in 10 s, each retried, and each timed-out
// batch still ran there). The keeper sends a few at a time; here 5,000 leases with a 10 ms node timeout, whose
// rounds are bursts of about 35 ms of the server's time, extend without failures.
BOOST_AUTO_TEST_CASE(a_round_of_batches_goes_out_a_few_at_a_time_within_the_node_timeout)
{
    constexpr int leases = 5000;
#ifndef REDLOCK_TEST_SANITIZED
    constexpr auto node_timeout = 10ms;
#else  // a sanitized client may itself take longer than 10 ms to read a reply: the case checks the counts only
    constexpr auto node_timeout = 200ms;
#endif
    redis_rig rig(1);
    auto& client = rig.client();
    std::vector<redlock::lease> held(leases);
    rig.run([&]() -> asio::awaitable<void> {
        // Taken 256 at a time (all at once, their own 10 ms deadlines would queue past), within some 50 ms: their
        // extensions fall due together.
        int next = 0, pending = leases;
        std::function<void()> take = [&] {
            const int k = next++;
            redlock::mutex m(client, "paced:" + std::to_string(k),
                             {.ttl = 1500ms, .node_timeout = node_timeout, .watchdog = true});
            m.async_lock([&, k](redlock::error_code ec, redlock::lease l) {
                BOOST_TEST(!ec, ec.message());
                held[static_cast<std::size_t>(k)] = std::move(l);
                --pending;
                if (next < leases) take();
            });
        };
        for (int i = 0; i < 256; ++i) take();
        for (int i = 0; i < 1500 && pending > 0; ++i) co_await sleep_for(10ms);
        BOOST_TEST_REQUIRE(pending == 0);
        const auto before = client.stats();
        co_await sleep_for(2000ms);  // four rounds of extensions (every 500 ms)
        const auto after = client.stats();
        const auto extensions = after.extensions - before.extensions;
        const auto failures = after.extension_failures - before.extension_failures;
        BOOST_TEST(extensions >= 3u * leases);
        BOOST_TEST_MESSAGE(extensions << " extensions, " << failures << " failed");
#ifndef REDLOCK_TEST_SANITIZED
        BOOST_TEST(failures * 50 <= extensions, failures << " failed extensions beside " << extensions);
#endif
    });
    for (const auto& l : held) BOOST_TEST(!l.lost());
}
