// The waiter list behind connect waiters, lease-loss waiters and single-flight loads: every waiter completes once,
// never inline; a cancellation takes off its own waiter only, and only when its type is accepted.
#include "common/waiter_list.hpp"

#include <redlock/detail/access.hpp>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/test/unit_test.hpp>

#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace asio = boost::asio;
using redlock::error;
using redlock::error_code;
using redlock::detail::pending_completion;
using redlock::detail::waiter_list;

namespace {

// What owns a list (a connection, a lease, a flight): the slots reach the list only while it lives.
template <class... Ts>
struct owner {
    owner(asio::io_context& ctx, asio::cancellation_type_t accepted)
        : strand(redlock::detail::make_strand_of(ctx.get_executor())), list(strand, accepted, [this] { ++last_left; })
    {}
    redlock::detail::strand_type strand;
    waiter_list<Ts...> list;
    int last_left = 0;
};

struct waiter_probe {
    std::optional<error_code> result;
    int calls = 0;
    asio::cancellation_signal cancel;
};

// Adds a waiter as an operation does: watched in the initiation, added on the strand.
template <class Handler>
void wait(asio::io_context& ctx, const std::shared_ptr<owner<>>& o, Handler handler,
          redlock::diagnostics* diag = nullptr)
{
    pending_completion<> done(std::move(handler), ctx.get_executor());
    const auto id = o->list.watch(done, o);
    asio::dispatch(o->strand, [o, id, diag, d = std::move(done)]() mutable { o->list.add(id, std::move(d), diag); });
}

void wait(asio::io_context& ctx, const std::shared_ptr<owner<>>& o, waiter_probe& p,
          redlock::diagnostics* diag = nullptr)
{
    wait(ctx, o,
         asio::bind_cancellation_slot(p.cancel.slot(),
                                      [&p](error_code ec) {
                                          p.result = ec;
                                          ++p.calls;
                                      }),
         diag);
}

}  // namespace

BOOST_AUTO_TEST_CASE(complete_all_completes_every_waiter_once_in_order_never_inline)
{
    asio::io_context ctx;
    auto o = std::make_shared<owner<>>(ctx, asio::cancellation_type::terminal);
    std::vector<int> order;
    redlock::diagnostics d1, d2;
    for (int i = 0; i < 3; ++i)
        wait(
            ctx, o, [&order, i](error_code ec) { order.push_back(ec ? i : -1); },
            i == 0   ? &d1
            : i == 1 ? &d2
                     : nullptr);
    ctx.poll();
    BOOST_TEST(o->list.size() == 3u);
    o->list.complete_all(error::closed, [](redlock::diagnostics& d) {
        redlock::detail::access::set_client_message(d, "connection closed");
    });
    BOOST_TEST(order.empty());  // posted, not inside complete_all
    BOOST_TEST(o->list.empty());
    ctx.poll();
    BOOST_TEST((order == std::vector<int>{0, 1, 2}));
    BOOST_TEST(d1.client_message() == "connection closed");
    BOOST_TEST(d2.client_message() == "connection closed");
    o->list.complete_all(error::closed);  // nobody left: nothing happens twice
    ctx.poll();
    BOOST_TEST(order.size() == 3u);
    BOOST_TEST(o->last_left == 0);  // the event emptied the list, not a cancellation
}

BOOST_AUTO_TEST_CASE(an_accepted_cancellation_takes_off_that_waiter_alone)
{
    asio::io_context ctx;
    auto o = std::make_shared<owner<>>(ctx, asio::cancellation_type::terminal);
    waiter_probe a, b;
    wait(ctx, o, a);
    wait(ctx, o, b);
    ctx.poll();
    a.cancel.emit(asio::cancellation_type::terminal);
    ctx.poll();
    BOOST_TEST((a.result == asio::error::operation_aborted));
    BOOST_TEST(!b.result.has_value());
    BOOST_TEST(o->list.size() == 1u);
    BOOST_TEST(o->last_left == 0);                     // b still waits
    a.cancel.emit(asio::cancellation_type::terminal);  // again, after it left: nothing
    o->list.complete_all(error_code{});
    ctx.poll();
    BOOST_TEST(a.calls == 1);
    BOOST_TEST((b.result == error_code{}));
    BOOST_TEST(b.calls == 1);
}

BOOST_AUTO_TEST_CASE(a_cancellation_of_a_type_not_accepted_is_ignored)
{
    asio::io_context ctx;
    auto o = std::make_shared<owner<>>(ctx, asio::cancellation_type::terminal);
    waiter_probe p;
    wait(ctx, o, p);
    ctx.poll();
    p.cancel.emit(asio::cancellation_type::partial);
    p.cancel.emit(asio::cancellation_type::total);
    ctx.poll();
    BOOST_TEST(!p.result.has_value());
    BOOST_TEST(o->list.size() == 1u);
    o->list.complete_all(error::lost);
    ctx.poll();
    BOOST_TEST((p.result == error::lost));
}

BOOST_AUTO_TEST_CASE(last_left_runs_when_a_cancellation_takes_off_the_last_waiter)
{
    asio::io_context ctx;
    auto all = asio::cancellation_type::terminal | asio::cancellation_type::partial | asio::cancellation_type::total;
    auto o = std::make_shared<owner<>>(ctx, all);
    waiter_probe a, b;
    wait(ctx, o, a);
    wait(ctx, o, b);
    ctx.poll();
    a.cancel.emit(asio::cancellation_type::total);
    ctx.poll();
    BOOST_TEST(o->last_left == 0);
    b.cancel.emit(asio::cancellation_type::partial);
    ctx.poll();
    BOOST_TEST(o->last_left == 1);
    BOOST_TEST((b.result == asio::error::operation_aborted));
}

BOOST_AUTO_TEST_CASE(a_cancellation_that_arrives_after_the_owner_is_gone_does_nothing)
{
    asio::io_context ctx;
    auto o = std::make_shared<owner<>>(ctx, asio::cancellation_type::terminal);
    waiter_probe p;
    wait(ctx, o, p);
    ctx.poll();
    o.reset();  // the list and its waiter go with it: the handler is dropped, never called
    p.cancel.emit(asio::cancellation_type::terminal);
    ctx.poll();
    BOOST_TEST(p.calls == 0);
}

BOOST_AUTO_TEST_CASE(a_cancellation_from_another_thread_is_applied_on_the_strand)
{
    asio::io_context ctx;
    auto o = std::make_shared<owner<>>(ctx, asio::cancellation_type::terminal);
    waiter_probe p;
    wait(ctx, o, p);
    ctx.poll();
    std::thread canceller([&] { p.cancel.emit(asio::cancellation_type::terminal); });
    canceller.join();
    BOOST_TEST(o->list.size() == 1u);  // not yet: the removal waits for the strand
    ctx.poll();
    BOOST_TEST(o->list.empty());
    BOOST_TEST((p.result == asio::error::operation_aborted));
}

BOOST_AUTO_TEST_CASE(values_reach_every_waiter)
{
    asio::io_context ctx;
    auto o = std::make_shared<owner<std::string>>(ctx, asio::cancellation_type::terminal);
    std::vector<std::string> got;
    for (int i = 0; i < 2; ++i) {
        pending_completion<std::string> done([&got](error_code, std::string v) { got.push_back(v); },
                                             ctx.get_executor());
        o->list.add(o->list.watch(done, o), std::move(done));
    }
    o->list.complete_all(error_code{}, std::string("loaded"));
    ctx.poll();
    BOOST_TEST((got == std::vector<std::string>{"loaded", "loaded"}));
}
