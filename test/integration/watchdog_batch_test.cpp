// The watchdog's batched extensions on real nodes: many leases held by one client stay held, their keys'
// TTLs are renewed, and the nodes see one script call per batch rather than one per lease.
#include <redlock/redlock.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/test/unit_test.hpp>

#include <common/lock_checks.hpp>
#include <common/redis_node.hpp>
#include <common/run_coro.hpp>

namespace asio = boost::asio;
using namespace std::chrono_literals;
using redlock::test::cluster;
using redlock::test::configs;
using redlock::test::run_coro;
using redlock::test::sleep_for;
constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);

namespace {
long command_calls(const redlock::test::redis_node& node, const std::string& command)
{
    const auto info = node.cli({"INFO", "commandstats"});
    const auto at = info.find("cmdstat_" + command + ":calls=");
    if (at == std::string::npos) return 0;
    return std::stol(info.substr(at + ("cmdstat_" + command + ":calls=").size()));
}
}  // namespace

BOOST_AUTO_TEST_CASE(many_leases_stay_held_with_one_script_call_per_batch)
{
    constexpr int leases = 300;
    cluster nodes(3);
    asio::io_context ctx;
    redlock::client c(ctx.get_executor(), configs(nodes));
    std::vector<redlock::lease> held;
    run_coro(ctx, [&]() -> asio::awaitable<void> {
        for (int k = 0; k < leases; ++k) {
            redlock::mutex m(c, "batch:" + std::to_string(k), {.ttl = 900ms, .watchdog = true});
            auto [ec, l] = co_await m.async_lock(use_tuple);
            BOOST_TEST_REQUIRE(!ec);
            held.push_back(std::move(l));
        }
        for (std::size_t i = 0; i < nodes.size(); ++i) nodes[i].cli({"CONFIG", "RESETSTAT"});
        co_await sleep_for(2000ms);  // more than two TTLs: every lease lives on extensions alone
    });
    for (std::size_t i = 0; i < nodes.size(); ++i) {
        const auto extensions = command_calls(nodes[i], "pexpire");
        const auto calls = command_calls(nodes[i], "evalsha");
        BOOST_TEST(extensions >= 2L * leases);  // each lease extended at least every 300 ms
        BOOST_TEST(calls * 10 <= extensions, calls << " script calls for " << extensions << " extensions");
        for (int k = 0; k < leases; k += 37) {
            const auto pttl = std::stol(nodes[i].cli({"PTTL", "batch:" + std::to_string(k)}));
            BOOST_TEST(pttl > 0);
        }
    }
    for (const auto& l : held) BOOST_TEST(!l.lost());
}
