// Cancelling an inspection (mutex::async_inspect, semaphore::async_inspect) while nodes stall: it completes once,
// with operation_aborted, at once; the stalled nodes' late answers land after it is gone; and the next inspection on
// the same client reads every node. Both read through read_nodes, whose fan-out once held the request only in the
// caller's frame: a late answer then read a freed request (heap-use-after-free under the asan preset).
//
// Setups: one node, paused once the client is connected (the request is written; its answer comes after the
// resume); three nodes, one paused and one answering 100 ms late each way through a proxy; and three nodes, one
// paused before the client connects (the read is queued only once its handshake completes, after the cancellation).
// Cancellations: a parallel group with a timer (wait_for_one), a cancellation_signal emitting terminal, and one
// emitting partial then terminal (the inspections document terminal cancellation only).
#include <redlock/redlock.hpp>

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/experimental/parallel_group.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/test/data/monomorphic.hpp>
#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>

#include <common/run_coro.hpp>
#include <common/servers/fault_proxy.hpp>
#include <common/servers/lock_checks.hpp>
#include <common/servers/redis_node.hpp>
#include <functional>
#include <optional>
#include <ostream>

namespace asio = boost::asio;
namespace data = boost::unit_test::data;
using namespace std::chrono_literals;
using redlock::error_code;
using redlock::test::cluster;
using redlock::test::fault_proxy;
using redlock::test::run_coro;
using redlock::test::sleep_for;
using steady = std::chrono::steady_clock;
constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);

// Named, not anonymous: the frames of the coroutine template below hold these types (g++'s -Wsubobject-linkage).
namespace inspect_cancellation {

enum class shape { parallel_group, terminal, partial_then_terminal };

std::ostream& operator<<(std::ostream& os, shape s)
{
    switch (s) {
        case shape::parallel_group:
            return os << "a parallel group with a timer";
        case shape::terminal:
            return os << "a terminal signal";
        case shape::partial_then_terminal:
            return os << "a partial signal, then a terminal one";
    }
    return os;
}

const auto shapes = data::make({shape::parallel_group, shape::terminal, shape::partial_then_terminal});

// How long after its start an inspection is cancelled, and how soon after that it must have completed.
constexpr auto cancel_after = 50ms;
constexpr auto prompt = 100ms;

// The nodes of one setup and what stalls them. With three nodes, node 2 is reached through a proxy, so that it can
// answer late without pausing the server.
class stalled_nodes {
public:
    explicit stalled_nodes(std::size_t n) : nodes_(n)
    {
        if (n == 3) slow_.emplace(nodes_[2].port());
    }

    cluster& nodes() noexcept { return nodes_; }
    std::vector<redlock::node_config> configs() const
    {
        auto out = redlock::test::configs(nodes_);
        if (slow_) out[2] = redlock::test::fast_reconnecting(slow_->url());
        return out;
    }
    // Node 0 of one, node 1 of three, stops answering; node 2 of three answers late.
    void stall()
    {
        nodes_[paused()].pause();
        if (slow_) slow_->set_mode(fault_proxy::mode::delay, 100ms);
    }
    void resume() { nodes_[paused()].resume(); }
    void heal()
    {
        resume();
        if (slow_) slow_->set_mode(fault_proxy::mode::pass);
    }

private:
    std::size_t paused() const noexcept { return nodes_.size() == 1 ? 0 : 1; }

    cluster nodes_;
    std::optional<fault_proxy> slow_;
};

/// Starts an inspection (a lock's or a semaphore's) with the handler it is given.
template <class View>
using inspect_fn = std::function<void(asio::any_completion_handler<void(error_code, View)>)>;

template <class View>
struct initiate_inspection {
    inspect_fn<View> start;
    template <class Handler>
    void operator()(Handler handler) const
    {
        start(std::move(handler));  // any_completion_handler keeps the handler's cancellation slot
    }
};

// Starts an inspection and cancels it `how` while `stalled` stalls; the inspection must complete once, with
// operation_aborted, within `prompt` of the cancellation. Resumes the paused node afterwards: its answer then
// reaches a connection whose caller is gone. `calls` counts the completions (the parallel group would itself fail on
// a second one); the caller checks it again once the late answers are in.
template <class View>
asio::awaitable<void> cancel_inspection(shape how, stalled_nodes& stalled, inspect_fn<View> start, int& calls)
{
    auto ex = co_await asio::this_coro::executor;
    if (how == shape::parallel_group) {
        asio::steady_timer budget(ex, cancel_after);
        const auto begin = steady::now();
        auto inspect = asio::async_initiate<const asio::deferred_t&, void(error_code, View)>(
            initiate_inspection<View>{start}, asio::deferred);
        auto [order, ec, view, timer_ec] =
            co_await asio::experimental::make_parallel_group(std::move(inspect), budget.async_wait(asio::deferred))
                .async_wait(asio::experimental::wait_for_one(), asio::use_awaitable);
        (void)view;
        ++calls;
        BOOST_TEST(order[0] == 1u, "the inspection completed before its budget, with the nodes stalled");
        BOOST_TEST(!timer_ec);
        BOOST_TEST(ec == asio::error::operation_aborted, ec.message());
        BOOST_TEST((steady::now() - begin < cancel_after + prompt));
    } else {
        asio::cancellation_signal cancel;
        std::optional<error_code> result;
        start(asio::bind_cancellation_slot(cancel.slot(), [&](error_code ec, View) {
            ++calls;
            result = ec;
        }));
        co_await sleep_for(cancel_after);
        if (result) BOOST_FAIL("the inspection completed with the nodes stalled: " << result->message());
        if (how == shape::partial_then_terminal) {
            cancel.emit(asio::cancellation_type::partial);  // not supported: ignored, or honoured; never both
            co_await sleep_for(20ms);
        }
        const auto emitted = steady::now();
        cancel.emit(asio::cancellation_type::terminal);
        while (!result && steady::now() - emitted < prompt) co_await sleep_for(2ms);
        BOOST_REQUIRE_MESSAGE(result, "no completion within " << prompt.count() << " ms of the cancellation");
        BOOST_TEST(*result == asio::error::operation_aborted, result->message());
    }
    stalled.resume();
}

}  // namespace inspect_cancellation

using namespace inspect_cancellation;

BOOST_DATA_TEST_CASE(a_cancelled_lock_inspection_completes_once_and_the_next_one_reads_every_node,
                     data::make({1, 3}) * shapes, n, how)
{
    stalled_nodes stalled(static_cast<std::size_t>(n));
    auto& nodes = stalled.nodes();
    for (std::size_t i = 0; i < nodes.size(); ++i) {
        nodes[i].cli({"SET", "inspected", "holder-token", "PX", "60000"});
        nodes[i].cli({"SET", "{inspected}:fence", "7"});
    }
    asio::io_context ctx;
    redlock::client client(ctx.get_executor(), stalled.configs());
    run_coro(
        ctx,
        [&]() -> asio::awaitable<void> {
            co_await client.async_connect(asio::use_awaitable);
            stalled.stall();
            int calls = 0;
            co_await cancel_inspection<redlock::lock_inspection>(
                how, stalled,
                [&](auto handler) { redlock::mutex(client, "inspected").async_inspect(std::move(handler)); }, calls);
            // One pipeline per node: this inspection's answers come after the cancelled one's.
            redlock::diagnostics diag;
            auto [ec, seen] = co_await redlock::mutex(client, "inspected").async_inspect(diag, use_tuple);
            BOOST_TEST(!ec, ec.message() << ": " << diag.message());
            BOOST_TEST(seen.reachable() == nodes.size());
            BOOST_TEST(seen.holder().value_or("none") == "holder-token");
            BOOST_TEST(seen.highest_fence() == 7u);
            for (const auto& v : seen.nodes) BOOST_TEST(v.ttl.has_value(), v.node << ": " << v.message);
            BOOST_TEST(calls == 1);
            stalled.heal();
        },
        std::chrono::seconds(10));
}

BOOST_DATA_TEST_CASE(a_cancelled_semaphore_inspection_completes_once_and_the_next_one_reads_every_node,
                     data::make({1, 3}) * shapes, n, how)
{
    stalled_nodes stalled(static_cast<std::size_t>(n));
    auto& nodes = stalled.nodes();
    asio::io_context ctx;
    redlock::client client(ctx.get_executor(), stalled.configs());
    run_coro(
        ctx,
        [&]() -> asio::awaitable<void> {
            co_await client.async_connect(asio::use_awaitable);
            redlock::semaphore sem(client, "inspected", 1, {.ttl = 60'000ms});
            auto [acquire_ec, held] = co_await sem.async_acquire(use_tuple);
            BOOST_REQUIRE_MESSAGE(!acquire_ec, acquire_ec.message());
            // The acquire returns once a quorum granted: wait for the permit on every node.
            for (std::size_t i = 0; i < nodes.size(); ++i)
                for (int tries = 0; tries < 100 && nodes[i].cli({"ZCARD", "inspected"}) != "1"; ++tries)
                    co_await sleep_for(5ms);
            stalled.stall();
            int calls = 0;
            co_await cancel_inspection<redlock::semaphore_inspection>(
                how, stalled, [&](auto handler) { sem.async_inspect(std::move(handler)); }, calls);
            redlock::diagnostics diag;
            auto [ec, seen] = co_await sem.async_inspect(diag, use_tuple);
            BOOST_TEST(!ec, ec.message() << ": " << diag.message());
            BOOST_TEST(seen.reachable() == nodes.size());
            for (const auto& v : seen.nodes) BOOST_TEST(v.held() == 1, v.node << ": " << v.message);
            BOOST_TEST(calls == 1);
            stalled.heal();
            co_await held.async_release(asio::use_awaitable);
        },
        std::chrono::seconds(10));
}

// Node 1 is paused before the client connects: the inspection waits for that node's connection, whose handshake
// completes only after the cancellation; the read it then queues must not need the cancelled caller either.
BOOST_AUTO_TEST_CASE(a_lock_inspection_cancelled_while_a_node_connects_completes_once_and_the_next_one_reads_it)
{
    stalled_nodes stalled(3);
    auto& nodes = stalled.nodes();
    for (std::size_t i = 0; i < nodes.size(); ++i) nodes[i].cli({"SET", "inspected", "holder-token", "PX", "60000"});
    nodes[1].pause();
    auto cfg = stalled.configs();
    cfg[1].connect_timeout = 2000ms;  // still in its handshake when the inspection is cancelled
    asio::io_context ctx;
    redlock::client client(ctx.get_executor(), cfg);
    run_coro(
        ctx,
        [&]() -> asio::awaitable<void> {
            int calls = 0;
            co_await cancel_inspection<redlock::lock_inspection>(
                shape::terminal, stalled,
                [&](auto handler) { redlock::mutex(client, "inspected").async_inspect(std::move(handler)); }, calls);
            redlock::diagnostics diag;
            auto [ec, seen] = co_await redlock::mutex(client, "inspected").async_inspect(diag, use_tuple);
            BOOST_TEST(!ec, ec.message() << ": " << diag.message());
            BOOST_TEST(seen.reachable() == nodes.size());
            BOOST_TEST(seen.holder().value_or("none") == "holder-token");
            BOOST_TEST(calls == 1);
        },
        std::chrono::seconds(10));
}
