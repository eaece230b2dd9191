// redlock::redis, one Redis deployment over one node (here a fake): what the types that mean "one Redis" take, and
// what it promises itself. Every API that means one Redis takes it, and a Redlock client does not compile there;
// requests reach the node with their routing key and in order; handlers complete on the redis's executor when they
// have none, never inline; a connect without diagnostics works; copies share one node, which lives as long as a copy
// or a limiter needs it; a null node is refused.
#include "common/fakes/fake_rig.hpp"

#include <redlock/bloom_filter.hpp>
#include <redlock/cache_guard.hpp>
#include <redlock/fenced_write.hpp>
#include <redlock/rate_limiter.hpp>
#include <redlock/redis.hpp>

#include <boost/asio/strand.hpp>
#include <boost/test/unit_test.hpp>

#include <memory>
#include <optional>
#include <string>
#include <type_traits>

namespace {

namespace asio = boost::asio;
using namespace redlock;
using namespace redlock::test;
using namespace std::chrono_literals;

constexpr auto use = asio::as_tuple(asio::use_awaitable);

// One Redis is one type: each API that means "one Redis deployment" takes a redis, and none takes a Redlock client
// of N nodes (or a bare node, or a connection) in its place.
static_assert(std::is_constructible_v<rate_limiter, const redis&, std::string, rate_limit>);
static_assert(!std::is_constructible_v<rate_limiter, const client&, std::string, rate_limit>);
static_assert(std::is_constructible_v<bloom_filter, redis, std::string, std::uint64_t, double>);
static_assert(!std::is_constructible_v<bloom_filter, std::shared_ptr<node>, std::string, std::uint64_t, double>);
static_assert(!std::is_constructible_v<bloom_filter, const client&, std::string, std::uint64_t, double>);
static_assert(std::is_constructible_v<cache_guard, const client&, redis, cache_options>);
static_assert(std::is_constructible_v<cache_guard, const client&, redis, bloom_filter, cache_options>);
static_assert(!std::is_constructible_v<cache_guard, const client&, std::shared_ptr<node>, cache_options>);
static_assert(!std::is_constructible_v<cache_guard, const client&, const client&, cache_options>);
static_assert(!std::is_convertible_v<const client&, redis>);
static_assert(!std::is_convertible_v<std::shared_ptr<node>, redis>);  // explicit: redis(executor, node)
// A cheap handle: copies share the deployment.
static_assert(std::is_copy_constructible_v<redis> && std::is_nothrow_move_constructible_v<redis>);

template <class Store>
concept fenced_write_store = requires(Store& s, const fenced_write& w)
{
    async_fenced_write(s, w);
};
static_assert(fenced_write_store<redis>);
static_assert(fenced_write_store<const redis>);
static_assert(!fenced_write_store<client>);
static_assert(!fenced_write_store<connection>);

}  // namespace

BOOST_AUTO_TEST_CASE(a_request_reaches_the_node_with_its_routing_key_and_its_replies_come_back)
{
    fake_redis_rig r;
    BOOST_TEST(r.store.name() == "redis://fake:7000");
    r.fake().on(script_kind::other, action::reply(bulk("PONG")));
    run_coro(r.ctx, [&]() -> asio::awaitable<void> {
        request ping;
        ping.push("PING");
        response replies;
        auto [ec] = co_await r.store.async_exec(ping, replies, "{user:7}:name", use);
        BOOST_TEST(!ec, ec.message());
        BOOST_REQUIRE(replies.size() == 1u);
        BOOST_TEST(replies[0].text == "PONG");
        auto [no_key_ec] = co_await r.store.async_exec(ping, replies, use);  // no key: an empty routing key
        BOOST_TEST(!no_key_ec);
    });
    const auto got = r.fake().received();
    BOOST_REQUIRE(got.size() == 2u);
    BOOST_TEST(got[0].routing_key == "{user:7}:name");
    BOOST_TEST(got[1].routing_key.empty());
}

BOOST_AUTO_TEST_CASE(requests_run_in_the_order_they_were_issued)
{
    fake_redis_rig r;
    r.fake().on(script_kind::other, action::reply(bulk("OK")));
    std::vector<int> completed;
    std::vector<request> reqs(5);
    std::vector<response> resps(5);
    for (int i = 0; i < 5; ++i) {
        reqs[i].push("SET", "k", i);
        r.store.async_exec(reqs[i], resps[i], "k", [&completed, i](error_code ec) {
            BOOST_TEST(!ec);
            completed.push_back(i);
        });
    }
    r.ctx.run_for(500ms);
    BOOST_TEST(completed == (std::vector<int>{0, 1, 2, 3, 4}), boost::test_tools::per_element());
    const auto got = r.fake().received();
    BOOST_REQUIRE(got.size() == 5u);
    for (std::size_t i = 0; i < got.size(); ++i) BOOST_TEST(got[i].request == i);
}

BOOST_AUTO_TEST_CASE(a_handler_without_an_executor_completes_on_the_redis_executor_never_inline)
{
    asio::io_context ctx;
    auto fakes = fake_nodes(1);
    const auto strand = asio::make_strand(ctx.get_executor());
    // The node runs on the context's executor; the redis was given a strand: completions land on the strand.
    redis store(strand, std::shared_ptr<node>(fakes.factory(ctx.get_executor(), fakes.configs().front())));
    BOOST_TEST((store.get_executor() == redis::executor_type(strand)));
    fakes[0].on(script_kind::other, action::reply(bulk("OK")));
    request req;
    req.push("PING");
    response replies;
    std::optional<bool> exec_on_strand, connect_on_strand;
    store.async_exec(req, replies, [&](error_code) { exec_on_strand = strand.running_in_this_thread(); });
    store.async_connect([&](error_code) { connect_on_strand = strand.running_in_this_thread(); });
    BOOST_TEST(!exec_on_strand.has_value());  // not inside the initiating call
    BOOST_TEST(!connect_on_strand.has_value());
    ctx.run_for(500ms);
    BOOST_TEST(exec_on_strand.value_or(false));
    BOOST_TEST(connect_on_strand.value_or(false));
}

BOOST_AUTO_TEST_CASE(a_connect_reports_the_node_result_with_or_without_diagnostics)
{
    fake_redis_rig r;
    r.fake().on_connect(action::fail(error::auth_failed));
    run_coro(r.ctx, [&]() -> asio::awaitable<void> {
        diagnostics diag;
        auto [with_diag] = co_await r.store.async_connect(diag, use);
        BOOST_TEST(with_diag == error::auth_failed);
        auto [without] = co_await r.store.async_connect(use);
        BOOST_TEST(without == error::auth_failed);
        r.fake().on_connect(action::reply({}));
        auto [connected] = co_await r.store.async_connect(use);
        BOOST_TEST(!connected, connected.message());
    });
    BOOST_TEST(r.fake().connects() == 3u);
}

BOOST_AUTO_TEST_CASE(copies_share_one_node_which_lives_while_a_copy_or_a_limiter_needs_it)
{
    asio::io_context ctx;
    auto fakes = fake_nodes(1);
    {
        std::optional<redis> first(std::in_place, ctx.get_executor(), fakes.configs().front(), fakes.factory);
        std::optional<redis> copy(first);  // a copy, not a second node (a second call of the factory would throw)
        std::optional<rate_limiter> limiter(std::in_place, *copy, "k", rate_limit{});
        first.reset();
        copy.reset();
        BOOST_TEST(!fakes[0].destroyed());  // the limiter still holds the deployment
        limiter.reset();
        BOOST_TEST(fakes[0].destroyed());
    }
    auto more = fake_nodes(1);
    redis a(ctx.get_executor(), more.configs().front(), more.factory);
    redis b = a;
    b.close();  // one deployment: closing a copy closes it for every copy
    BOOST_TEST(more[0].closed());
    BOOST_TEST(a.name() == b.name());
}

BOOST_AUTO_TEST_CASE(a_null_node_is_refused_with_invalid_argument)
{
    asio::io_context ctx;
    auto is_invalid = [](const boost::system::system_error& e) { return e.code() == error::invalid_argument; };
    BOOST_CHECK_EXCEPTION(redis(ctx.get_executor(), std::shared_ptr<node>()), boost::system::system_error, is_invalid);
    node_factory makes_nothing = [](const asio::any_io_executor&, const node_config&) -> std::unique_ptr<node> {
        return nullptr;
    };
    BOOST_CHECK_EXCEPTION(redis(ctx.get_executor(), node_config{}, makes_nothing), boost::system::system_error,
                          is_invalid);
}

BOOST_AUTO_TEST_CASE(usage_is_the_node_counters)
{
    fake_redis_rig r;
    const usage u = r.store.get_usage();  // a fake keeps none: zeros, not a failure
    BOOST_TEST(u.requests == 0u);
    BOOST_TEST(u.connects == 0u);
}
