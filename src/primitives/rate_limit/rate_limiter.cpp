// The rate limiter: one script call per decision on the deployment's node; acquire sleeps retry_after between calls.
#include "primitives/rate_limit/rate_arguments.hpp"
#include "primitives/rate_limit/rate_scripts.hpp"
#include "primitives/rate_limit/rate_wait.hpp"
#include "quorum/redis_impl.hpp"

#include <redlock/detail/access.hpp>
#include <redlock/rate_limiter.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace redlock {
namespace detail {
namespace {

namespace asio = boost::asio;
using clock = std::chrono::steady_clock;
using ms = std::chrono::milliseconds;
using result = std::tuple<error_code, rate_decision>;

clock::time_point deadline_after(ms wait)
{
    const auto now = clock::now();
    // A wait past the clock's range is forever, not an overflow into the past.
    const auto representable = std::chrono::duration_cast<ms>(clock::time_point::max() - now) - std::chrono::hours(24);
    return wait >= representable ? clock::time_point::max() : now + wait;
}

ms left_until(clock::time_point deadline)
{
    if (deadline == clock::time_point::max()) return ms::max();
    return std::chrono::ceil<ms>(deadline - clock::now());  // rounded down, the last call would come early
}

bool cancelled(asio::cancellation_state state)
{
    return state.cancelled() != asio::cancellation_type::none;
}

// The node's answer as a decision, or why there is none (its text in `diag`).
std::tuple<error_code, std::optional<rate_decision>> read_answer(const fan_out_state& call, diagnostics* diag)
{
    if (!call.answered(0)) return {make_error_code(error::timeout), std::nullopt};
    const auto ec = *call.results[0];
    const auto& replies = call.replies[0];
    if (diag)
        for (const auto& reply : replies)
            if (reply.is_error()) access::set_server_message(*diag, std::string(reply.error_text()));
    if (ec) return {ec, std::nullopt};
    auto d = rate_scripts::parse_decision(replies);
    if (!d) {
        if (diag)
            access::set_client_message(*diag, "the node's reply is not a rate decision: " +
                                                  (replies.empty() ? std::string("nothing") : to_string(replies[0])));
        return {make_error_code(error::protocol_error), std::nullopt};
    }
    return {error_code{}, d};
}

asio::awaitable<result> acquire(std::shared_ptr<redis_impl> store, std::string key, rate_limit limit, std::int64_t cost,
                                bool waits, diagnostics* diag)
{
    // Partial, not total: a call the node already ran stays counted (a cancelled acquire may have used room).
    co_await asio::this_coro::reset_cancellation_state(asio::enable_partial_cancellation());
    co_await asio::this_coro::throw_if_cancelled(false);
    if (diag) diag->clear();
    if (auto why = invalid_rate_arguments(key, limit, cost, waits); !why.empty()) {
        if (diag) access::set_client_message(*diag, why);
        co_return result{make_error_code(error::invalid_argument), {}};
    }
    const auto aborted = [] { return result{make_error_code(asio::error::operation_aborted), {}}; };
    const auto req = std::make_shared<const request>(rate_scripts::decision_request(key, limit, cost));
    const auto deadline = waits ? deadline_after(limit.wait) : clock::now();
    asio::steady_timer pause(store->strand());
    for (;;) {
        auto call = co_await store->call(req, key, rate_scripts::classify_decision);
        if (call->cancelled) co_return aborted();
        if (diag) call->report(*diag, store->names());
        auto [ec, decision] = read_answer(*call, diag);
        if (!waits) co_return result{ec, decision.value_or(rate_decision{})};

        const auto step =
            decision ? after_decision(*decision, left_until(deadline)) : after_failure(left_until(deadline));
        switch (step.what) {
            case rate_wait_step::kind::admitted:
                co_return result{error_code{}, *decision};
            case rate_wait_step::kind::give_up:
                if (!decision) co_return result{ec, rate_decision{}};
                if (diag)
                    access::set_client_message(*diag, "no room for cost " + std::to_string(cost) +
                                                          " within the wait; admitted in " +
                                                          std::to_string(decision->retry_after.count()) + " ms");
                co_return result{make_error_code(error::rate_limited), *decision};
            case rate_wait_step::kind::pause:
                break;
        }
        pause.expires_after(step.pause);
        co_await pause.async_wait(asio::as_tuple(asio::use_awaitable));
        if (cancelled(co_await asio::this_coro::cancellation_state)) co_return aborted();
    }
}

}  // namespace

void start_rate_acquire(const std::shared_ptr<redis_impl>& store, std::string key, rate_limit limit, std::int64_t cost,
                        bool wait, diagnostics* diag, rate_handler handler)
{
    spawn_op<rate_decision>(store->strand(), store->io_executor(),
                            acquire(store, std::move(key), limit, cost, wait, diag), std::move(handler));
}

}  // namespace detail

rate_limiter::rate_limiter(const redis& store, std::string key, rate_limit limit)
    : impl_(detail::access::impl(store)), key_(std::move(key)), limit_(limit)
{}

}  // namespace redlock
