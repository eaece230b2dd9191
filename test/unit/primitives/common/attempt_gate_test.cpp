// The attempt gates: one attempt at a time per lock per client, handed to waiters in FIFO order; a freed gate's entry
// is kept for the next attempt on its lock, and swept once free gates are the most.
#include "primitives/common/attempt_gate.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/test/unit_test.hpp>

#include <memory>
#include <string>
#include <vector>

namespace asio = boost::asio;
using redlock::detail::attempt_gates;

BOOST_AUTO_TEST_CASE(a_gate_is_taken_once_and_free_again_after_leave)
{
    attempt_gates gates;
    BOOST_TEST(gates.try_enter("a"));
    BOOST_TEST(!gates.try_enter("a"));
    BOOST_TEST(gates.try_enter("b"));  // another lock's gate
    BOOST_TEST(!gates.contended("a"));
    gates.leave("a");
    BOOST_TEST(gates.try_enter("a"));  // its kept entry is free again, not still taken
    gates.leave("a");
    gates.leave("a");  // leaving a free gate does not free it twice
    BOOST_TEST(gates.try_enter("a"));
    BOOST_TEST(!gates.try_enter("a"));
}

BOOST_AUTO_TEST_CASE(a_freed_gate_passes_to_the_longest_waiting)
{
    asio::io_context ctx;
    attempt_gates gates;
    BOOST_TEST(gates.try_enter("k"));
    std::vector<int> order;
    std::vector<std::unique_ptr<asio::steady_timer>> timers;
    for (int w = 0; w < 3; ++w) {
        timers.push_back(std::make_unique<asio::steady_timer>(ctx));
        asio::co_spawn(
            ctx,
            [&, w, timer = timers.back().get()]() -> asio::awaitable<void> {
                const std::string id = "k";
                if (co_await gates.enter(id, *timer)) order.push_back(w);
            },
            asio::detached);
    }
    ctx.poll();
    BOOST_TEST(gates.contended("k"));
    for (int handed = 0; handed < 3; ++handed) {
        gates.leave("k");  // to the next waiter: the gate stays taken
        ctx.poll();
        BOOST_TEST(!gates.try_enter("k"));
    }
    BOOST_TEST(order == (std::vector<int>{0, 1, 2}));
    gates.leave("k");
    BOOST_TEST(gates.try_enter("k"));
}

// Many locks each tried once leave free gates behind; past the kept number they are swept, and neither the sweep nor
// the reuse frees or takes a gate that is taken.
BOOST_AUTO_TEST_CASE(free_gates_are_swept_without_touching_taken_ones)
{
    attempt_gates gates;
    BOOST_TEST(gates.try_enter("held"));
    for (int i = 0; i < 5000; ++i) {
        const auto id = "lock:" + std::to_string(i);
        BOOST_TEST_REQUIRE(gates.try_enter(id));
        gates.leave(id);
    }
    BOOST_TEST(gates.entries() <= redlock::detail::kept_entries::floor + 1);  // a leak would keep 5000
    BOOST_TEST(!gates.try_enter("held"));
    for (int i = 0; i < 5000; i += 499) BOOST_TEST(gates.try_enter("lock:" + std::to_string(i)));
    BOOST_TEST(!gates.try_enter("lock:0"));
}
