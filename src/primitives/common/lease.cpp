#include "primitives/common/lease_state.hpp"
#include "primitives/mutex/lock_scripts.hpp"

#include "primitives/common/watchdog_schedule.hpp"
#include <redlock/lease.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/system_executor.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace redlock {
namespace detail {

namespace asio = boost::asio;
constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);

lease_state::lease_state(std::shared_ptr<client_impl> client, std::vector<std::string> keys, std::string token,
                         std::uint64_t fencing_token, lock_options options, clock::time_point granted_at,
                         clock::time_point valid_until)
    : client_(std::move(client)),
      keys_(std::move(keys)),
      token_(std::move(token)),
      fencing_token_(fencing_token),
      options_(options),
      valid_until_(valid_until.time_since_epoch().count()),
      acquired_at_(granted_at),
      granted_at_(granted_at),
      keeper_timer_(client_->strand())
{}

void lease_state::start()
{
    asio::co_spawn(client_->strand(), keep(shared_from_this()), [](std::exception_ptr) {
        // keep() catches nothing on purpose: it only ends by returning, or with its io_context.
    });
}

asio::awaitable<void> lease_state::keep(std::shared_ptr<lease_state> self)
{
    watchdog_plan plan;
    plan.enabled = self->options_.watchdog;
    plan.interval =
        self->options_.extend_interval.count() > 0 ? self->options_.extend_interval : self->options_.ttl / 3;
    plan.retry = std::max(std::chrono::milliseconds(1), std::min(plan.interval / 4, std::chrono::milliseconds(100)));
    if (self->options_.max_hold.count() > 0) plan.stop_extending_at = self->acquired_at_ + self->options_.max_hold;

    while (self->status_ == status::held) {
        const auto step = next_watchdog_step(plan, self->granted_at_, self->last_extension_failed_, clock::now(),
                                             self->valid_until());
        self->keeper_timer_.expires_at(step.at);
        co_await self->keeper_timer_.async_wait(use_tuple);  // also woken early by extend and release
        if (self->status_ != status::held) break;
        const auto now = clock::now();
        if (now >= self->valid_until()) {
            // Also after a process pause: no extension counts once the local validity has ended.
            self->declare_lost();
            break;
        }
        if (step.what == watchdog_step::action::extend && now >= step.at) co_await self->extend_once();
    }
}

asio::awaitable<error_code> lease_state::extend_once()
{
    const auto start = clock::now();
    // Bounded by the validity in force: the lease is lost at that instant, however late the nodes answer.
    auto result =
        co_await client_->fan_out(lock_scripts::acquire_request(keys_, token_, options_.ttl, options_.node_timeout),
                                  lock_scripts::classify_acquire, client_impl::until::decided, valid_until());
    if (status_ != status::held) co_return make_error_code(status_ == status::lost ? error::lost : error::not_owner);
    if (result->cancelled) co_return make_error_code(asio::error::operation_aborted);
    if (clock::now() >= valid_until()) {
        // A grant that arrives after the validity ended does not revive the lease: someone else may have
        // held the lock in between.
        declare_lost();
        co_return make_error_code(error::lost);
    }
    const auto& tally = result->tally;
    const auto until = detail::valid_until(start, options_.ttl, options_.drift_factor);
    if (tally.decide() == quorum_tally::decision::reached && until > clock::now()) {
        granted_at_ = start;
        if (until > valid_until()) set_valid_until(until);
        last_extension_failed_ = false;
        keeper_timer_.cancel();  // reschedule from the new grant
        co_return error_code{};
    }
    last_extension_failed_ = true;
    if (tally.no() > tally.nodes() - tally.quorum()) {
        declare_lost();  // other owners answered on a quorum
        co_return make_error_code(error::not_owner);
    }
    co_return make_error_code(result->expired ? error::timeout : error::no_quorum);
}

asio::awaitable<std::tuple<error_code>> lease_state::extend()
{
    if (status_ == status::lost) co_return std::tuple{make_error_code(error::lost)};
    if (status_ == status::released) co_return std::tuple{make_error_code(error::not_owner)};
    if (clock::now() >= valid_until()) {
        declare_lost();
        co_return std::tuple{make_error_code(error::lost)};
    }
    co_return std::tuple{co_await extend_once()};
}

asio::awaitable<std::tuple<error_code>> lease_state::release()
{
    const bool was_lost = status_ == status::lost;
    if (!stop_holding()) co_return std::tuple{error_code{}};  // idempotent
    auto result = co_await client_->fan_out(lock_scripts::release_request(keys_, token_, options_.node_timeout),
                                            lock_scripts::classify_release, client_impl::until::all_answered);
    if (was_lost) co_return std::tuple{make_error_code(error::lost)};
    if (result->cancelled) co_return std::tuple{make_error_code(asio::error::operation_aborted)};
    const auto& tally = result->tally;
    if (tally.decide() == quorum_tally::decision::reached) co_return std::tuple{error_code{}};
    if (tally.no() > tally.nodes() - tally.quorum()) co_return std::tuple{make_error_code(error::not_owner)};
    co_return std::tuple{make_error_code(error::no_quorum)};
}

bool lease_state::stop_holding()
{
    if (status_ == status::released) return false;
    status_ = status::released;
    keeper_timer_.cancel();
    finish_waiters(asio::error::operation_aborted);
    return true;
}

void lease_state::release_in_background()
{
    if (!stop_holding()) return;
    client_->send_to_all(lock_scripts::release_request(keys_, token_, options_.node_timeout));
}

void lease_state::wait_lost(pending_completion<> waiter, std::uint64_t id)
{
    if (status_ == status::lost) return waiter.complete(error::lost);
    if (status_ == status::released) return waiter.complete(asio::error::operation_aborted);
    lost_waiters_.push_back({id, std::move(waiter)});
}

void lease_state::cancel_wait(std::uint64_t id)
{
    auto it = std::find_if(lost_waiters_.begin(), lost_waiters_.end(), [id](auto& w) { return w.id == id; });
    if (it == lost_waiters_.end()) return;
    auto done = std::move(it->done);
    lost_waiters_.erase(it);
    done.complete(asio::error::operation_aborted);
}

void lease_state::declare_lost()
{
    if (status_ != status::held) return;
    status_ = status::lost;
    lost_.store(true, std::memory_order_relaxed);
    keeper_timer_.cancel();
    finish_waiters(error::lost);
}

void lease_state::finish_waiters(error_code ec)
{
    auto waiters = std::move(lost_waiters_);
    lost_waiters_.clear();
    for (auto& w : waiters) w.done.complete(ec);
}

void start_extend(const std::shared_ptr<lease_state>& state, lease_handler handler)
{
    if (!state) return pending_completion<>(std::move(handler), asio::system_executor()).complete(error::not_owner);
    spawn_op<>(state->strand(), state->extend(), std::move(handler));
}

void start_release(const std::shared_ptr<lease_state>& state, lease_handler handler)
{
    if (!state) return pending_completion<>(std::move(handler), asio::system_executor()).complete({});
    spawn_op<>(state->strand(), state->release(), std::move(handler));
}

void start_wait_lost(const std::shared_ptr<lease_state>& state, lease_handler handler)
{
    if (!state) {
        return pending_completion<>(std::move(handler), asio::system_executor())
            .complete(asio::error::operation_aborted);
    }
    pending_completion<> waiter(std::move(handler), state->strand().get_inner_executor());
    const auto id = state->next_waiter_id();
    if (auto slot = waiter.slot(); slot.is_connected()) {
        slot.assign([weak = std::weak_ptr(state), id](asio::cancellation_type_t type) {
            if ((type & asio::cancellation_type::terminal) == asio::cancellation_type::none) return;
            if (auto s = weak.lock()) asio::dispatch(s->strand(), [s, id] { s->cancel_wait(id); });
        });
    }
    asio::dispatch(state->strand(),
                   [state, id, w = std::move(waiter)]() mutable { state->wait_lost(std::move(w), id); });
}

}  // namespace detail

lease::lease(std::shared_ptr<detail::lease_state> state) noexcept : state_(std::move(state)) {}

lease::~lease()
{
    if (state_) boost::asio::dispatch(state_->strand(), [s = state_] { s->release_in_background(); });
}

lease& lease::operator=(lease&& other) noexcept
{
    if (this != &other) {
        lease dropped(std::move(*this));
        state_ = std::move(other.state_);
    }
    return *this;
}

const std::vector<std::string>& lease::keys() const noexcept
{
    static const std::vector<std::string> none;
    return state_ ? state_->keys() : none;
}

const std::string& lease::token() const noexcept
{
    static const std::string none;
    return state_ ? state_->token() : none;
}

std::uint64_t lease::fencing_token() const noexcept
{
    return state_ ? state_->fencing_token() : 0;
}

std::chrono::steady_clock::time_point lease::valid_until() const noexcept
{
    return state_ ? state_->valid_until() : std::chrono::steady_clock::time_point{};
}

std::chrono::milliseconds lease::validity() const noexcept
{
    const auto left = valid_until() - std::chrono::steady_clock::now();
    return std::max(std::chrono::milliseconds(0), std::chrono::duration_cast<std::chrono::milliseconds>(left));
}

bool lease::lost() const noexcept
{
    return state_ && state_->lost();
}

}  // namespace redlock
