// The counting semaphore: permits granted on a permit quorum of the client's N nodes (N = 1 is the same code),
// plain or fair, through the lock kinds' call, attempts and lease machinery.
#include "primitives/common/client_impl.hpp"
#include "primitives/common/fair_attempts.hpp"
#include "primitives/common/lock_call.hpp"
#include "primitives/common/lock_kind.hpp"
#include "primitives/common/token.hpp"
#include "primitives/common/validity.hpp"
#include "primitives/semaphore/semaphore_scripts.hpp"

#include <redlock/detail/access.hpp>
#include <redlock/semaphore.hpp>

#include <boost/asio/this_coro.hpp>

namespace redlock {
namespace detail {
namespace {

namespace asio = boost::asio;
using ms = std::chrono::milliseconds;

std::size_t quorum_of(std::size_t nodes, std::int64_t limit) noexcept
{
    return limit >= 1 ? permit_quorum(nodes, static_cast<std::size_t>(limit)) : 0;
}

// The quorum of the largest limit the nodes that answered report: a set_limit may have changed it since the call
// was made, and a quorum smaller than the limits in force would admit more holders than any of them.
std::size_t quorum_from_reports(const lock_call& call, const fan_out_state& answers)
{
    std::int64_t largest = 0;
    for (std::size_t i = 0; i < answers.replies.size(); ++i) {
        if (!answers.answered(i) || answers.votes[i] == vote::error) continue;
        if (auto limit = call.kind->read_answer(*answers.results[i], answers.replies[i]).limit)
            largest = std::max(largest, *limit);
    }
    return quorum_of(answers.replies.size(), largest >= 1 ? largest : call.lease().limit);
}

// More nodes than may fail refused because the permits asked are above the limit they store (a set_limit lowered
// it, or a raise missed them): no quorum can grant them while those limits stand, and waiting would only hold a
// fair queue back. Says so with the stored limit, and whether other nodes store one large enough (then the nodes
// disagree: the fix is a set_limit that reaches them all); empty when a refusal may still pass.
std::string permits_above_stored_limit(const lock_call& call, const fan_out_state& answers)
{
    std::size_t below = 0;
    std::int64_t least = 0, most = 0;  // the limits those nodes store
    std::int64_t largest = 0;          // the largest any node reports
    for (std::size_t i = 0; i < answers.replies.size(); ++i) {
        if (!answers.answered(i) || answers.votes[i] == vote::error) continue;
        const auto limit = call.kind->read_answer(*answers.results[i], answers.replies[i]).limit;
        if (limit) largest = std::max(largest, *limit);
        if (answers.votes[i] != vote::no || !limit || *limit >= call.lease().units) continue;
        least = below == 0 ? *limit : std::min(least, *limit);
        most = std::max(most, *limit);
        ++below;
    }
    const auto nodes = answers.replies.size();
    const auto quorum = answers.tally.quorum();
    if (below == 0 || below + quorum <= nodes) return {};
    const auto stored = least == most ? "a limit of " + std::to_string(most)
                                      : "limits of " + std::to_string(least) + " to " + std::to_string(most);
    auto text = std::to_string(call.lease().units) + " permits asked, but " + std::to_string(below) + " of " +
                std::to_string(nodes) + " nodes store " + stored + " (this semaphore names " +
                std::to_string(call.lease().limit) + "; async_set_limit changes the stored one); a grant needs " +
                std::to_string(quorum) + " nodes, so none is possible ";
    if (largest < call.lease().units) return text + "until the limit is raised";
    return text + "while they do. Other nodes store " + std::to_string(largest) +
           ": the nodes disagree (a set_limit reached only some of them); run async_set_limit again";
}

// A permit is taken and kept as a lock is, without fencing.
lock_options as_lock_options(const semaphore_options& s)
{
    return {.ttl = s.ttl,
            .wait = s.wait,
            .node_timeout = s.node_timeout,
            .retry_delay = s.retry_delay,
            .retry_jitter = s.retry_jitter,
            .drift_factor = s.drift_factor,
            .min_validity = s.min_validity,
            .watchdog = s.watchdog,
            .extend_interval = s.extend_interval,
            .max_hold = s.max_hold,
            .fair = s.fair,
            .waiter_ttl = s.waiter_ttl,
            .replica_acks = s.replica_acks,
            .replica_ack_timeout = s.replica_ack_timeout};
}

std::string invalid_semaphore_arguments(const client_impl& client, const std::string& name, std::int64_t limit,
                                        std::int64_t permits, const lock_options& o)
{
    if (name.empty()) return "the semaphore's name is empty";
    if (limit < 1 || limit > semaphore::max_limit)
        return "the limit must be in [1, " + std::to_string(semaphore::max_limit) + "], not " + std::to_string(limit);
    if (permits < 1 || permits > limit)
        return "permits must be in [1, limit = " + std::to_string(limit) + "], not " + std::to_string(permits);
    return invalid_arguments(client, {name}, o, {});
}

request repair_permit(const lease_spec& permit, ms ttl, ms node_timeout)
{
    return semaphore_scripts::acquire_request(permit.routing_key(), permit.token, permit.units, ttl, permit.limit,
                                              node_timeout);
}

const lease_protocol& semaphore_protocol()
{
    static const lease_protocol p{
        .extend = semaphore_scripts::extend_request,
        .extended = semaphore_scripts::classify_extend,
        .release = semaphore_scripts::release_request,
        .released = semaphore_scripts::classify_release,
        // Where a node lost the permit (restarted empty), taking it back is safe: the node admits it only if it
        // fits.
        .repair = repair_permit,
        .needs_repair = semaphore_scripts::not_held,
        .extend_batch = semaphore_scripts::extend_batch_request,
        .remaining = semaphore_scripts::extended_for,
    };
    return p;
}

const lease_protocol& fair_semaphore_protocol()
{
    static const lease_protocol p = [] {
        auto fair = semaphore_protocol();
        fair.release = semaphore_scripts::fair_release_and_leave;  // a holder leaves the queue too
        return fair;
    }();
    return p;
}

attempt_fn semaphore_attempts(std::shared_ptr<const lock_call> call, bool)
{
    // The same request every attempt: the same permit id, so a retry that lands twice holds one permit.
    const auto& lease = call->lease();
    const auto& o = call->options;
    auto acquire = std::make_shared<const request>(semaphore_scripts::acquire_request(
        lease.routing_key(), lease.token, lease.units, o.ttl, lease.limit, o.node_timeout));
    return same_request_attempts(std::move(call), std::move(acquire));
}

request fair_semaphore_acquire(const lock_call& call, std::uint64_t ticket, bool take_ticket)
{
    const auto& o = call.options;
    return semaphore_scripts::fair_acquire_request(call.lease().routing_key(), call.lease().token, call.lease().units,
                                                   o.ttl, call.lease().limit, o.waiter_ttl, ticket, take_ticket,
                                                   o.node_timeout);
}

asio::awaitable<std::tuple<error_code, permit>> acquire(std::shared_ptr<client_impl> client, std::string name,
                                                        std::int64_t limit, std::int64_t permits,
                                                        semaphore_options options, bool one_attempt, diagnostics* diag)
{
    auto o = as_lock_options(options);
    // As a lock call: every cancellation type, and no co_await throws on it (a cancelled attempt cleans up).
    co_await asio::this_coro::reset_cancellation_state(asio::enable_total_cancellation());
    co_await asio::this_coro::throw_if_cancelled(false);
    if (diag) diag->clear();
    if (auto why = invalid_semaphore_arguments(*client, name, limit, permits, o); !why.empty()) {
        client->counters().acquire_ended(make_error_code(error::invalid_argument), {}, {}, false);
        if (diag) access::set_client_message(*diag, why);
        co_return std::tuple{make_error_code(error::invalid_argument), permit{}};
    }
    const auto& kind = o.fair ? fair_semaphore_kind() : semaphore_kind();
    lease_spec spec;
    spec.keys = {std::move(name)};
    spec.token = random_token();
    spec.key_value = spec.token;  // the permit's id is its member in the set
    spec.units = permits;
    spec.limit = limit;
    const auto quorum = quorum_of(client->nodes().size(), limit);
    auto call = make_call(std::move(client), kind, std::move(spec), o, quorum, diag);
    auto outcome = co_await run_call(std::move(call), one_attempt);
    auto& [ec, state] = outcome;
    co_return std::tuple{ec, state ? access::make<permit>(access::make<lease>(std::move(state)), permits) : permit{}};
}

asio::awaitable<std::tuple<error_code>> set_limit(std::shared_ptr<client_impl> client, std::string name,
                                                  std::int64_t limit, semaphore_options options, diagnostics* diag)
{
    auto o = as_lock_options(options);
    if (diag) diag->clear();
    auto& nodes = client->nodes();
    if (auto why = invalid_semaphore_arguments(*client, name, limit, 1, o); !why.empty()) {
        if (diag) access::set_client_message(*diag, why);
        co_return std::tuple{make_error_code(error::invalid_argument)};
    }
    if (o.node_timeout == ms(0)) o.node_timeout = default_node_timeout(o.ttl);
    auto change = std::make_shared<const request>(semaphore_scripts::set_limit_request(
        name, limit, random_token() + ":limit", o.ttl + semaphore_scripts::key_margin, o.node_timeout));
    auto result = co_await nodes.fan_out(change, name, answered, nodes.size(), until::all_answered);
    if (result->cancelled) co_return std::tuple{make_error_code(asio::error::operation_aborted)};
    if (diag) result->report(*diag, nodes.names());
    if (result->tally.yes() == nodes.size()) co_return std::tuple{error_code{}};
    if (diag)
        access::set_client_message(*diag, "the limit was set on " + std::to_string(result->tally.yes()) + " of " +
                                              std::to_string(nodes.size()) +
                                              " nodes; the others keep theirs until a set_limit reaches them");
    co_return std::tuple{make_error_code(error::no_quorum)};
}

}  // namespace

const lock_kind& semaphore_kind()
{
    static const lock_kind kind{
        .protocol = &semaphore_protocol(),
        .read_answer = semaphore_scripts::read_acquire,
        .vote = verdict_of<semaphore_scripts::read_acquire>,
        .attempts = semaphore_attempts,
        .clean_up = semaphore_scripts::release_request,
        .quorum_from = quorum_from_reports,
        .beyond_reach = permits_above_stored_limit,
    };
    return kind;
}

const lock_kind& fair_semaphore_kind()
{
    static const lock_kind kind{
        .protocol = &fair_semaphore_protocol(),
        .read_answer = semaphore_scripts::read_fair_acquire,
        .vote = verdict_of<semaphore_scripts::read_fair_acquire>,
        .attempts = fair_attempts,
        .clean_up = semaphore_scripts::fair_release_keeping_place,
        .fair_acquire = fair_semaphore_acquire,
        .quorum_from = quorum_from_reports,
        .beyond_reach = permits_above_stored_limit,
    };
    return kind;
}

void start_acquire(const std::shared_ptr<client_impl>& client, std::string name, std::int64_t limit,
                   std::int64_t permits, semaphore_options options, bool one_attempt, diagnostics* diag,
                   permit_handler handler)
{
    spawn_op<permit>(client->strand(), client->io_executor(),
                     acquire(client, std::move(name), limit, permits, options, one_attempt, diag), std::move(handler));
}

void start_set_limit(const std::shared_ptr<client_impl>& client, std::string name, std::int64_t limit,
                     semaphore_options options, diagnostics* diag,
                     asio::any_completion_handler<void(error_code)> handler)
{
    spawn_op<>(client->strand(), client->io_executor(), set_limit(client, std::move(name), limit, options, diag),
               std::move(handler));
}

}  // namespace detail

semaphore::semaphore(const client& c, std::string name, std::int64_t limit, semaphore_options options)
    : impl_(detail::access::impl(c)), name_(std::move(name)), limit_(limit), options_(options), nodes_(c.size())
{}

std::size_t semaphore::quorum() const noexcept
{
    return detail::quorum_of(nodes_, limit_);
}

std::size_t semaphore::failures_tolerated() const noexcept
{
    const auto q = quorum();
    return q > 0 && nodes_ >= q ? nodes_ - q : 0;
}

}  // namespace redlock
