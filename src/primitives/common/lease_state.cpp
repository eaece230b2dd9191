#include "primitives/common/decisions.hpp"
#include "primitives/common/lease_state.hpp"
#include "primitives/common/validity.hpp"
#include "primitives/common/watchdog_schedule.hpp"

#include <redlock/detail/access.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace redlock::detail {

namespace asio = boost::asio;
using ms = std::chrono::milliseconds;

lease_state::lease_state(std::shared_ptr<client_impl> client, lease_protocol protocol, lease_timing timing,
                         std::vector<std::string> keys, std::string token, std::uint64_t fencing_token,
                         clock::time_point granted_at, clock::time_point valid_until)
    : client_(std::move(client)),
      protocol_(std::move(protocol)),
      timing_(timing),
      keys_(std::move(keys)),
      token_(std::move(token)),
      fencing_token_(fencing_token),
      valid_until_(valid_until.time_since_epoch().count()),
      acquired_at_(granted_at),
      granted_at_(granted_at),
      keeper_timer_(client_->strand())
{}

const std::shared_ptr<const request>& lease_state::extend_request()
{
    if (!extend_request_) extend_request_ = std::make_shared<const request>(protocol_.requests->extend());
    return extend_request_;
}

const std::shared_ptr<const request>& lease_state::release_request()
{
    if (!release_request_) release_request_ = std::make_shared<const request>(protocol_.requests->release());
    return release_request_;
}

void lease_state::start()
{
    auto self = shared_from_this();
    asio::co_spawn(client_->strand(), keep(self), [self](std::exception_ptr e) {
        // The keeper ends by returning. If it failed instead, nobody extends the lease any more: say so now
        // rather than let the holder believe it is protected.
        if (e) asio::dispatch(self->strand(), [self] { self->declare_lost("the watchdog failed"); });
    });
}

asio::awaitable<void> lease_state::keep(std::shared_ptr<lease_state> self)
{
    const auto& t = self->timing_;
    watchdog_plan plan;
    plan.enabled = t.watchdog;
    plan.interval = t.extend_interval.count() > 0 ? t.extend_interval : t.ttl / 3;
    plan.retry = std::max(ms(1), std::min(plan.interval / 4, ms(100)));
    if (t.max_hold.count() > 0 &&
        t.max_hold < std::chrono::duration_cast<ms>(clock::time_point::max() - self->acquired_at_))
        plan.stop_extending_at = self->acquired_at_ + t.max_hold;  // a max_hold past the clock's range: no limit

    while (self->status_ == status::held) {
        const auto step = next_watchdog_step(plan, self->granted_at_, self->last_extension_failed_, clock::now(),
                                             self->valid_until());
        self->keeper_timer_.expires_at(step.at);
        co_await self->keeper_timer_.async_wait(asio::as_tuple(asio::use_awaitable));  // also woken early
        if (self->status_ != status::held) break;
        const auto now = clock::now();
        if (now >= self->valid_until()) {
            // Also after a process pause: no extension counts once the local validity has ended.
            self->declare_lost(self->last_extension_failed_
                                   ? "its validity ended without a successful extension: " +
                                         self->last_extension_failure_
                                   : std::string("its validity ended (no extension was due: watchdog off, or "
                                                 "max_hold reached)"));
            break;
        }
        if (step.what == watchdog_step::action::extend && now >= step.at) co_await extend_once(self, nullptr);
    }
}

asio::awaitable<error_code> lease_state::extend_once(std::shared_ptr<lease_state> self, diagnostics* diag)
{
    const auto start = clock::now();
    // Bounded by the validity in force: the lease is lost at that instant, however late the nodes answer.
    auto result = co_await self->client_->nodes().fan_out(self->extend_request(), self->protocol_.routing_key,
                                                          self->protocol_.extended, self->protocol_.quorum,
                                                          until::decided, self->valid_until());
    if (diag) access::set_nodes(*diag, result->outcomes(self->client_->nodes().names()));
    if (self->status_ != status::held)
        co_return make_error_code(self->status_ == status::lost ? error::lost : error::not_owner);
    if (result->cancelled) co_return make_error_code(asio::error::operation_aborted);
    const auto outcome = decide_extend(result->tally, result->expired, clock::now() >= self->valid_until());
    if (!outcome.ec) {
        const auto until = detail::valid_until(start, self->timing_.ttl, self->timing_.drift_factor);
        self->granted_at_ = start;
        if (until > self->valid_until()) self->set_valid_until(until);
        self->last_extension_failed_ = false;
        self->keeper_timer_.cancel();  // reschedule from the new grant
        if (self->protocol_.needs_repair)
            asio::co_spawn(self->strand(), repair(self, std::move(result)), [](std::exception_ptr) {});
        co_return error_code{};
    }
    self->last_extension_failed_ = true;
    self->last_extension_failure_ = tally_text(result->tally, "extended", "not ours");
    if (diag) access::set_client_message(*diag, "the extension failed: " + self->last_extension_failure_);
    if (!outcome.lease_lost) co_return outcome.ec;
    // A grant that arrives after the validity ended does not revive the lease; "not ours" on so many nodes that
    // no quorum can be ours means it is gone, whether another owner holds the keys or they are missing
    // (restarted empty, expired).
    const auto missing = self->nodes_missing_keys(*result).size();
    if (outcome.ec == error::lost) {
        self->declare_lost("an extension completed after the validity had ended");
    } else if (missing > 0) {
        self->declare_lost("our keys are missing on " + std::to_string(missing) + " of " +
                           std::to_string(result->tally.nodes()) +
                           " nodes (restarted without persistence, or expired): " + self->last_extension_failure_);
        co_return make_error_code(error::lost);
    } else {
        self->declare_lost("an extension found other owners: " + self->last_extension_failure_);
    }
    co_return outcome.ec;
}

std::vector<std::size_t> lease_state::nodes_missing_keys(const fan_out_state& extension) const
{
    std::vector<std::size_t> missing;
    if (!protocol_.needs_repair) return missing;
    for (std::size_t i = 0; i < extension.replies.size(); ++i) {
        if (extension.answered(i) && extension.votes[i] == vote::no && protocol_.needs_repair(extension.replies[i]))
            missing.push_back(i);
    }
    return missing;
}

asio::awaitable<void> lease_state::repair(std::shared_ptr<lease_state> self, std::shared_ptr<fan_out_state> extension)
{
    // The extension was decided at the quorum; the nodes that lost our keys may answer later.
    extension = co_await node_set::outcome(std::move(extension), until::all_answered, self->valid_until());
    // Released or lost meanwhile, or past the validity (the keeper is about to declare the loss): take nothing.
    if (self->status_ != status::held || clock::now() >= self->valid_until()) co_return;
    const auto lost = self->nodes_missing_keys(*extension);
    // Sent on the strand while held, so on each node's connection it runs before any later release.
    if (!lost.empty())
        self->client_->nodes().send_to(lost, std::make_shared<const request>(self->protocol_.requests->repair()),
                                       self->protocol_.routing_key);
}

asio::awaitable<std::tuple<error_code>> lease_state::extend(std::shared_ptr<lease_state> self, diagnostics* diag)
{
    if (diag) diag->clear();
    if (self->status_ == status::lost) co_return std::tuple{make_error_code(error::lost)};
    if (self->status_ == status::released) co_return std::tuple{make_error_code(error::not_owner)};
    if (clock::now() >= self->valid_until()) {
        self->declare_lost("its validity ended before the extension");
        co_return std::tuple{make_error_code(error::lost)};
    }
    co_return std::tuple{co_await extend_once(self, diag)};
}

asio::awaitable<std::tuple<error_code>> lease_state::release(std::shared_ptr<lease_state> self, diagnostics* diag)
{
    if (diag) diag->clear();
    const bool was_lost = self->status_ == status::lost;
    if (!self->stop_holding()) co_return std::tuple{error_code{}};  // idempotent
    auto result =
        co_await self->client_->nodes().fan_out(self->release_request(), self->protocol_.routing_key,
                                                self->protocol_.released, self->protocol_.quorum, until::all_answered);
    if (diag) {
        access::set_nodes(*diag, result->outcomes(self->client_->nodes().names()));
        if (was_lost) access::set_client_message(*diag, "the lease had been lost: " + self->lost_why_);
    }
    if (result->cancelled && !was_lost) co_return std::tuple{make_error_code(asio::error::operation_aborted)};
    co_return std::tuple{decide_release(result->tally, was_lost)};
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
    client_->nodes().send_to_all(release_request(), protocol_.routing_key);
}

void lease_state::wait_lost(pending_completion<> waiter, std::uint64_t id, diagnostics* diag)
{
    if (status_ == status::lost) {
        if (diag) access::set_client_message(*diag, lost_why_);
        return waiter.complete(error::lost);
    }
    if (status_ == status::released) return waiter.complete(asio::error::operation_aborted);
    lost_waiters_.push_back({id, std::move(waiter), diag});
}

void lease_state::cancel_wait(std::uint64_t id)
{
    auto it = std::find_if(lost_waiters_.begin(), lost_waiters_.end(), [id](auto& w) { return w.id == id; });
    if (it == lost_waiters_.end()) return;
    auto done = std::move(it->done);
    lost_waiters_.erase(it);
    done.complete(asio::error::operation_aborted);
}

void lease_state::declare_lost(std::string why)
{
    if (status_ != status::held) return;
    status_ = status::lost;
    lost_why_ = std::move(why);
    lost_.store(true, std::memory_order_relaxed);
    keeper_timer_.cancel();
    finish_waiters(error::lost);
}

void lease_state::finish_waiters(error_code ec)
{
    auto waiters = std::move(lost_waiters_);
    lost_waiters_.clear();
    for (auto& w : waiters) {
        if (w.diag && ec == error::lost) access::set_client_message(*w.diag, lost_why_);
        w.done.complete(ec);
    }
}

}  // namespace redlock::detail
