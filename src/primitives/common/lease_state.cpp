#include "primitives/common/decisions.hpp"
#include "primitives/common/lease_state.hpp"
#include "primitives/common/validity.hpp"
#include "primitives/common/watchdog_schedule.hpp"

#include <redlock/detail/access.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>
#include <functional>

namespace redlock::detail {

namespace asio = boost::asio;
using ms = std::chrono::milliseconds;

lease_state::lease_state(std::shared_ptr<client_impl> client, const lease_protocol& protocol,
                         std::shared_ptr<const lease_spec> spec, std::size_t quorum, lease_timing timing,
                         std::uint64_t fencing_token, clock::time_point granted_at, clock::time_point valid_until)
    : client_(std::move(client)),
      protocol_(protocol),
      spec_(std::move(spec)),
      quorum_(quorum),
      timing_(timing),
      fencing_token_(fencing_token),
      valid_until_(valid_until.time_since_epoch().count()),
      acquired_at_(granted_at),
      granted_at_(granted_at),
      loss_waiters_(client_->strand(), asio::cancellation_type::terminal)
{}

const std::shared_ptr<const request>& lease_state::extend_request()
{
    if (!extend_request_) {
        auto req = protocol_.extend(*spec_, timing_.ttl, timing_.node_timeout);
        extend_request_ = std::make_shared<const request>(timing_.acks.on() ? acknowledged(req, timing_.acks) : req);
    }
    return extend_request_;
}

const std::shared_ptr<const request>& lease_state::release_request()
{
    if (!release_request_)  // release id: the token and attempt 0 (attempts that failed use their number)
        release_request_ =
            std::make_shared<const request>(protocol_.release(*spec_, spec_->token + ":0", timing_.node_timeout));
    return release_request_;
}

const std::shared_ptr<const request>& lease_state::check_request()
{
    if (!check_request_) {
        request req;
        for (const auto& key : spec_->keys) req.push("GET", key);  // a read: the node tracks the keys again
        req.set_timeout(timing_.node_timeout.count() > 0 ? timing_.node_timeout : ms(1000));
        check_request_ = std::make_shared<const request>(std::move(req));
    }
    return check_request_;
}

void lease_state::start()
{
    schedule_next();
    if (protocol_.tracked && status_ == status::held) {
        client_->watched_keys().add(shared_from_this());
        keys_watched_ = true;
    }
}

void lease_state::unwatch_keys()
{
    if (!keys_watched_) return;
    keys_watched_ = false;
    client_->watched_keys().remove(*this);
}

void lease_state::on_key_news(std::size_t node)
{
    if (status_ != status::held || !keys_watched_ || node >= client_->nodes().size()) return;
    if (named_nodes_.empty()) named_nodes_.assign(client_->nodes().size(), false);  // at the first news: rare
    named_nodes_[node] = true;
    if (checking_) return;
    checking_ = true;
    asio::co_spawn(strand(), check_named_nodes(shared_from_this()), [](std::exception_ptr) {});
}

asio::awaitable<void> lease_state::check_named_nodes(std::shared_ptr<lease_state> self)
{
    try {
        auto& nodes = self->client_->nodes();
        auto& named = self->named_nodes_;
        while (self->status_ == status::held) {
            const auto at = std::find(named.begin(), named.end(), true);
            if (at == named.end()) break;
            *at = false;
            const auto i = static_cast<std::size_t>(at - named.begin());
            auto read = co_await fan_out_to_one(nodes.at(i), nodes.strand(), self->check_request(),
                                                self->spec_->routing_key(), answered);
            // Ours there, or no answer (the node is down or slow: its next session says `all`, the next extension
            // tells meanwhile), or an error reply (LOADING after a restart with persistence): nothing known lost.
            if (!read->answered(0) || *read->results[0] || !self->gone_from(read->replies[0])) continue;
            if (self->status_ != status::held) break;
            // Gone there, or another owner's: is it still held on enough nodes that a quorum may hold it? The
            // next extension repairs a minority that lost it, as it would without tracking.
            auto all = co_await nodes.fan_out(self->check_request(), self->spec_->routing_key(), answered, nodes.size(),
                                              until::all_answered);
            std::size_t gone = 0;
            for (std::size_t j = 0; j < nodes.size(); ++j)
                if (all->answered(j) && !*all->results[j] && self->gone_from(all->replies[j])) ++gone;
            if (self->status_ == status::held && gone > nodes.size() - self->quorum_)
                self->declare_lost(
                    "our keys are missing on " + std::to_string(gone) + " of " + std::to_string(nodes.size()) +
                    " nodes (deleted, evicted, expired, or the node restarted empty), as client tracking "
                    "reported");
        }
    } catch (...) {
    }
    self->checking_ = false;
}

bool lease_state::gone_from(const response& replies) const
{
    if (replies.size() != spec_->keys.size()) return false;
    if (std::any_of(replies.begin(), replies.end(), [](const resp::value& v) { return v.is_error(); })) return false;
    return !std::all_of(replies.begin(), replies.end(), [&](const resp::value& v) {
        return v.data_type == resp::type::bulk_string && v.text == spec_->key_value;
    });
}

watchdog_plan lease_state::plan() const
{
    const auto& t = timing_;
    watchdog_plan p;
    p.enabled = t.watchdog;
    p.interval = t.extend_interval.count() > 0 ? t.extend_interval : t.ttl / 3;
    p.retry = std::max(ms(1), std::min(p.interval / 4, ms(100)));
    if (t.max_hold.count() > 0 && t.max_hold < std::chrono::duration_cast<ms>(clock::time_point::max() - acquired_at_))
        p.stop_extending_at = acquired_at_ + t.max_hold;  // a max_hold past the clock's range: no limit
    return p;
}

void lease_state::schedule_next()
{
    unschedule();
    if (status_ != status::held) return;
    const auto p = plan();
    next_step_ = next_watchdog_step(p, granted_at_, last_extension_failed_, clock::now(), valid_until());
    keeper_entry_ = client_->keeper().schedule(shared_from_this(), next_step_.at);
}

std::chrono::milliseconds lease_state::early_by() const
{
    if (next_step_.what != watchdog_step::action::extend) return ms(0);  // never lost early
    return std::min(lease_keeper::batch_window, plan().interval / 10);
}

void lease_state::unschedule()
{
    if (keeper_entry_) client_->keeper().unschedule(*keeper_entry_);
    keeper_entry_.reset();
}

bool lease_state::due(clock::time_point now)
{
    if (status_ != status::held) return false;
    if (now >= valid_until()) {
        // Also after a process pause: no extension counts once the local validity has ended.
        declare_lost(last_extension_failed_
                         ? "its validity ended without a successful extension: " + last_extension_failure_
                         : std::string("its validity ended (no extension was due: watchdog off, or max_hold reached)"));
        return false;
    }
    if (next_step_.what == watchdog_step::action::extend) return true;  // woken at most early_by() early
    schedule_next();  // a loss step, but the validity moved since it was scheduled
    return false;
}

asio::awaitable<void> lease_state::extend_alone(std::shared_ptr<lease_state> self)
{
    try {
        co_await extend_once(self, nullptr);
        self->schedule_next();
    } catch (...) {
        // Nobody extends the lease any more: say so now rather than let the holder believe it is protected.
        self->declare_lost("the watchdog failed");
    }
}

asio::awaitable<void> lease_state::extend_batch(std::vector<std::shared_ptr<lease_state>> leases)
{
    try {
        auto& client = *leases.front()->client_;
        std::vector<batch_entry> entries;
        entries.reserve(leases.size());
        auto deadline = clock::time_point::max();
        auto node_timeout = ms::max();
        for (const auto& l : leases) {
            entries.push_back({l->spec_.get(), l->timing_.ttl});
            deadline = std::min(deadline, l->valid_until());
            node_timeout = std::min(node_timeout, l->timing_.node_timeout);
        }
        // The leases of a batch ask for the same acknowledgement (lease_keeper batches by it).
        const auto acks = leases.front()->timing_.acks;
        auto req = leases.front()->protocol_.extend_batch(entries, node_timeout);
        if (acks.on()) req = acknowledged(req, acks);
        const auto start = clock::now();
        // Every node's answer (or its deadline, or the first validity to end): each lease then tallies its own.
        auto batch = co_await client.nodes().fan_out(std::make_shared<const request>(std::move(req)), {}, answered,
                                                     client.nodes().size(), until::all_answered, deadline, acks);
        for (std::size_t j = 0; j < leases.size(); ++j) {
            auto& l = leases[j];
            if (l->status_ == status::held) l->conclude_extension(start, l->share_of(*batch, j), nullptr, false);
            l->schedule_next();
        }
    } catch (...) {
        for (auto& l : leases) l->declare_lost("the watchdog failed");
    }
}

std::shared_ptr<fan_out_state> lease_state::share_of(const fan_out_state& batch, std::size_t j) const
{
    const auto n = batch.replies.size();
    auto share = std::make_shared<fan_out_state>(client_->strand(), nullptr, n, quorum_);
    for (std::size_t i = 0; i < n; ++i) {
        if (!batch.answered(i)) continue;
        auto ec = *batch.results[i];
        const auto& reply = batch.replies[i];
        if (!ec || ec == error::replica_acks) {  // the replies of a batch too few replicas acknowledged are whole
            if (reply.size() == 1 && reply[0].data_type == resp::type::array && j < reply[0].elements.size())
                share->replies[i].push_back(reply[0].elements[j]);
            else
                ec = make_error_code(error::protocol_error);
        }
        // A batch too few replicas acknowledged on this node: an extension there counts as failed; a refusal stays
        // one (another owner, or keys lost, whatever the replicas have).
        if (ec == error::replica_acks && protocol_.extended({}, share->replies[i]) != vote::yes) ec = {};
        share->results[i] = ec;
        share->votes[i] = protocol_.extended(ec, share->replies[i]);
        if (ec == error::replica_acks) share->diags[i] = batch.diags[i];
        share->tally.add(share->votes[i]);
    }
    share->expired = batch.expired && share->tally.decide() == quorum_tally::decision::pending;
    return share;
}

asio::awaitable<error_code> lease_state::extend_once(std::shared_ptr<lease_state> self, diagnostics* diag)
{
    const auto start = clock::now();
    // Bounded by the validity in force: the lease is lost at that instant, however late the nodes answer. A
    // failure waits for a quorum's answers (or every node's) when it can: "another owner holds it" (not_owner)
    // must not read as "too few answered" because a node down answered first.
    auto result = co_await self->client_->nodes().fan_out(
        self->extend_request(), self->spec_->routing_key(), self->protocol_.extended, self->quorum_,
        until::quorum_answered, self->valid_until(), self->timing_.acks);
    co_return self->conclude_extension(start, std::move(result), diag, true);
}

error_code lease_state::conclude_extension(clock::time_point start, std::shared_ptr<fan_out_state> result,
                                           diagnostics* diag, bool late_answers)
{
    if (diag) result->report(*diag, client_->nodes().names());
    if (status_ != status::held) return make_error_code(status_ == status::lost ? error::lost : error::not_owner);
    if (result->cancelled) return make_error_code(asio::error::operation_aborted);
    const auto outcome = decide_extend(result->tally, result->expired, clock::now() >= valid_until());
    if (!outcome.ec) {
        const auto until = detail::valid_until(start, timing_.ttl, timing_.drift_factor);
        granted_at_ = start;
        if (until > valid_until()) set_valid_until(until);
        server_remaining_ = remaining_on_quorum(*result);
        last_extension_failed_ = false;
        client_->counters().extension(true);
        if (keeper_entry_) schedule_next();  // from the new grant
        if (protocol_.needs_repair)
            asio::co_spawn(strand(), repair(shared_from_this(), std::move(result), late_answers),
                           [](std::exception_ptr) {});
        return {};
    }
    last_extension_failed_ = true;
    last_extension_failure_ = tally_text(result->tally, "extended", "not ours");
    if (const auto unacknowledged = result->unacknowledged(); unacknowledged > 0)
        last_extension_failure_ = std::to_string(unacknowledged) + " extension(s) not acknowledged by " +
                                  std::to_string(timing_.acks.replicas) + " replica(s) within " +
                                  std::to_string(timing_.acks.timeout.count()) + " ms did not count; " +
                                  last_extension_failure_;
    client_->counters().extension(false);
    if (diag) access::set_client_message(*diag, "the extension failed: " + last_extension_failure_);
    // Not extended where the replicas lack it: a failover there would bring back the old expiry.
    if (!outcome.lease_lost) return for_want_of_acks(outcome.ec, result->tally, result->unacknowledged());
    // A grant that arrives after the validity ended does not revive the lease; "not ours" on so many nodes that
    // no quorum can be ours means it is gone, whether another owner holds the keys or they are missing
    // (restarted empty, expired).
    const auto missing = nodes_missing_keys(*result).size();
    if (outcome.ec == error::lost) {
        declare_lost("an extension completed after the validity had ended");
    } else if (missing > 0) {
        declare_lost("our keys are missing on " + std::to_string(missing) + " of " +
                     std::to_string(result->tally.nodes()) +
                     " nodes (deleted, evicted, expired, or the node restarted empty): " + last_extension_failure_);
        return make_error_code(error::lost);
    } else {
        declare_lost("an extension found other owners: " + last_extension_failure_);
    }
    return outcome.ec;
}

ms lease_state::remaining_on_quorum(const fan_out_state& extension) const
{
    if (!protocol_.remaining) return ms(0);
    std::vector<ms> times;
    for (std::size_t i = 0; i < extension.replies.size(); ++i)
        if (extension.answered(i) && extension.votes[i] == vote::yes)
            if (auto t = protocol_.remaining(extension.replies[i])) times.push_back(*t);
    const auto q = extension.tally.quorum();
    if (q == 0 || times.size() < q) return ms(0);
    std::nth_element(times.begin(), times.begin() + static_cast<std::ptrdiff_t>(q - 1), times.end(), std::greater<>());
    return times[q - 1];
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

asio::awaitable<void> lease_state::repair(std::shared_ptr<lease_state> self, std::shared_ptr<fan_out_state> extension,
                                          bool late_answers)
{
    // The extension was decided at the quorum; the nodes that lost our keys may answer later. (A batch waited
    // for every node already.)
    if (late_answers)
        extension = co_await node_set::outcome(std::move(extension), until::all_answered, self->valid_until());
    // Released or lost meanwhile, or past the validity (the keeper is about to declare the loss): take nothing.
    if (self->status_ != status::held || clock::now() >= self->valid_until()) co_return;
    const auto lost = self->nodes_missing_keys(*extension);
    // Sent on the strand while held, so on each node's connection it runs before any later release.
    if (!lost.empty())
        self->client_->nodes().send_to(lost,
                                       std::make_shared<const request>(self->protocol_.repair(
                                           *self->spec_, self->timing_.ttl, self->timing_.node_timeout)),
                                       self->spec_->routing_key());
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
    auto result = co_await self->client_->nodes().fan_out(self->release_request(), self->spec_->routing_key(),
                                                          self->protocol_.released, self->quorum_, until::all_answered);
    if (diag) {
        result->report(*diag, self->client_->nodes().names());
        if (was_lost) access::set_client_message(*diag, "the lease had been lost: " + self->lost_why_);
    }
    if (result->cancelled && !was_lost) co_return std::tuple{make_error_code(asio::error::operation_aborted)};
    const auto ec = decide_release(result->tally, was_lost);
    self->client_->counters().release(!ec);
    co_return std::tuple{ec};
}

bool lease_state::stop_holding()
{
    if (status_ == status::released) return false;
    status_ = status::released;
    unschedule();
    unwatch_keys();
    finish_waiters(asio::error::operation_aborted);
    return true;
}

void lease_state::release_in_background()
{
    if (!stop_holding()) return;
    client_->nodes().send_to_all(release_request(), spec_->routing_key());
}

bool lease_state::hand_over()
{
    if (status_ != status::held) return false;
    return stop_holding();
}

std::shared_ptr<lease_state> lease_state::resumed() const
{
    auto again = std::make_shared<lease_state>(client_, protocol_, spec_, quorum_, timing_, fencing_token_, granted_at_,
                                               valid_until());
    again->acquired_at_ = acquired_at_;  // max_hold counts from the first grant
    again->start();
    return again;
}

void lease_state::wait_lost(pending_completion<> waiter, std::uint64_t id, diagnostics* diag)
{
    if (status_ == status::lost) {
        if (diag) access::set_client_message(*diag, lost_why_);
        return waiter.complete(error::lost);
    }
    if (status_ == status::released) return waiter.complete(asio::error::operation_aborted);
    loss_waiters_.add(id, std::move(waiter), diag);
}

void lease_state::declare_lost(std::string why)
{
    if (status_ != status::held) return;
    status_ = status::lost;
    lost_why_ = std::move(why);
    lost_.store(true, std::memory_order_relaxed);
    client_->counters().loss();
    client_->log(log_level::warning, "lease of " + spec_->routing_key() + " lost: " + lost_why_);
    unschedule();
    unwatch_keys();
    finish_waiters(error::lost);
}

void lease_state::finish_waiters(error_code ec)
{
    if (ec != error::lost) return loss_waiters_.complete_all(ec);
    loss_waiters_.complete_all(ec, [this](diagnostics& d) { access::set_client_message(d, lost_why_); });
}

}  // namespace redlock::detail
