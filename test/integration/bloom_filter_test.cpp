// The Bloom filter on a real node: no false negatives, the false-positive rate at capacity within 1.1 times
// the configured one, and a filter of another shape refused on the same name.
#include <redlock/redlock.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/test/unit_test.hpp>

#include <common/run_coro.hpp>
#include <common/servers/lock_checks.hpp>
#include <common/servers/redis_node.hpp>

namespace asio = boost::asio;
using redlock::error;
using redlock::test::run_coro;
constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);

namespace {

std::vector<std::string> keys(const std::string& prefix, std::size_t from, std::size_t count)
{
    std::vector<std::string> out;
    for (std::size_t i = from; i < from + count; ++i) out.push_back(prefix + std::to_string(i));
    return out;
}

}  // namespace

BOOST_AUTO_TEST_CASE(false_positive_rate_at_capacity_is_within_1_1_times_the_configured_rate)
{
    redlock::test::redis_node node;
    asio::io_context ctx;
    redlock::redis store(ctx.get_executor(), redlock::test::fast_reconnecting(node.url()));
    constexpr std::size_t capacity = 100'000, probes = 200'000, batch = 2000;
    redlock::bloom_filter filter(store, "users:bloom", capacity, 0.01);
    BOOST_TEST(filter.hashes() == 7u);
    BOOST_TEST(filter.predicted_rate(capacity) <= 0.01);
    run_coro(
        ctx,
        [&]() -> asio::awaitable<void> {
            std::uint64_t added = 0;
            for (std::size_t from = 0; from < capacity; from += batch) {
                auto items = keys("user:", from, batch);
                added += co_await filter.async_add(std::move(items), asio::use_awaitable);
            }
            BOOST_TEST(added > capacity * 99 / 100);  // a few collide with earlier items: counted as not new
            // Every member is found.
            std::size_t missing = 0;
            for (std::size_t from = 0; from < capacity; from += batch) {
                auto items = keys("user:", from, batch);
                const auto present = co_await filter.async_contains(std::move(items), asio::use_awaitable);
                missing += static_cast<std::size_t>(std::count(present.begin(), present.end(), false));
            }
            BOOST_TEST(missing == 0u);
            // 200,000 keys never added: the measured rate's standard deviation is 0.00022.
            std::size_t false_positives = 0;
            for (std::size_t from = 0; from < probes; from += batch) {
                auto items = keys("stranger:", from, batch);
                const auto present = co_await filter.async_contains(std::move(items), asio::use_awaitable);
                false_positives += static_cast<std::size_t>(std::count(present.begin(), present.end(), true));
            }
            const double rate = static_cast<double>(false_positives) / probes;
            BOOST_TEST_MESSAGE("false-positive rate at capacity: " << rate << " (configured 0.01, m = " << filter.bits()
                                                                   << ", k = " << filter.hashes() << ")");
            BOOST_TEST(rate <= 0.011);
            BOOST_TEST(std::stoul(node.cli({"STRLEN", "users:bloom"})) <= (filter.bits() + 7) / 8);
        },
        std::chrono::seconds(120));
}

BOOST_AUTO_TEST_CASE(a_filter_of_another_shape_is_refused_on_the_same_name)
{
    redlock::test::redis_node node;
    asio::io_context ctx;
    redlock::redis store(ctx.get_executor(), redlock::test::fast_reconnecting(node.url()));
    redlock::bloom_filter small(store, "shape", 1000, 0.01);
    redlock::bloom_filter large(store, "shape", 100'000, 0.01);  // Redisson #2015: members would be lost
    run_coro(ctx, [&]() -> asio::awaitable<void> {
        std::vector<std::string> one{"a"};
        auto [ec, added] = co_await small.async_add(one, use_tuple);
        BOOST_TEST(!ec);
        BOOST_TEST(added == 1u);
        auto [again_ec, again] = co_await small.async_add(one, use_tuple);
        BOOST_TEST(again == 0u);  // already in
        auto [other_ec, other] = co_await large.async_add(one, use_tuple);
        BOOST_TEST(other_ec == error::server_error);
        auto [test_ec, present] = co_await large.async_contains(one, use_tuple);
        BOOST_TEST(test_ec == error::server_error);
        BOOST_TEST(node.cli({"GET", redlock::aux_name("shape", "bloom")}).starts_with("m=9595 k=7 "));
    });
}

BOOST_AUTO_TEST_CASE(a_filter_that_does_not_exist_rules_nothing_out_and_bad_arguments_fail_before_any_io)
{
    redlock::test::redis_node node;
    asio::io_context ctx;
    redlock::redis store(ctx.get_executor(), redlock::test::fast_reconnecting(node.url()));
    run_coro(ctx, [&]() -> asio::awaitable<void> {
        redlock::bloom_filter empty(store, "nothing", 100, 0.01);
        std::vector<std::string> items{"a", "b"};
        redlock::diagnostics diag;
        auto present = co_await empty.async_contains(items, diag, asio::use_awaitable);
        BOOST_TEST(present == (std::vector<bool>{true, true}));  // maybe present: nothing can be ruled out
        BOOST_TEST(!diag.client_message().empty());
        BOOST_TEST(node.cli({"EXISTS", redlock::aux_name("nothing", "bloom")}) == "0");  // a read creates nothing
        const auto scripts = node.command_stat("evalsha");
        for (auto bad : {redlock::bloom_filter(store, "", 100, 0.01), redlock::bloom_filter(store, "b", 0, 0.01),
                         redlock::bloom_filter(store, "b", 100, 1.0)}) {
            auto [ec, n] = co_await bad.async_add(items, use_tuple);
            BOOST_TEST(ec == error::invalid_argument);
        }
        std::vector<std::string> none;
        auto [ec, n] = co_await empty.async_add(none, use_tuple);
        BOOST_TEST(ec == error::invalid_argument);
        BOOST_TEST(node.command_stat("evalsha") == scripts);
    });
}
