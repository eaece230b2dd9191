#include "primitives/common/decisions.hpp"
#include "primitives/common/lease_state.hpp"
#include "primitives/common/validity.hpp"
#include "primitives/mutex/fencing.hpp"
#include "primitives/mutex/lock_call.hpp"

#include <redlock/detail/access.hpp>
#include <redlock/key_layout.hpp>

#include <algorithm>
#include <functional>

namespace redlock::detail {

namespace asio = boost::asio;
using clock = std::chrono::steady_clock;
using ms = std::chrono::milliseconds;

void lock_call::release_attempt(std::uint64_t n, const fan_out_state& attempt) const
{
    std::vector<std::size_t> maybe_granted;
    for (std::size_t i = 0; i < attempt.votes.size(); ++i)
        if (!attempt.answered(i) || attempt.votes[i] != vote::no) maybe_granted.push_back(i);
    if (maybe_granted.empty()) return;
    client->nodes().send_to(
        maybe_granted,
        std::make_shared<const request>(clean_up(lease, clean_up_id(lease.token, n), options.node_timeout)),
        lease.routing_key());
}

asio::awaitable<std::shared_ptr<fan_out_state>> fan_out_acquire(std::shared_ptr<const lock_call> call,
                                                                std::shared_ptr<const request> acquire, until wait_for)
{
    auto& nodes = call->client->nodes();
    const auto deadline = clock::now() + acquire->timeout() + node_set::backstop_margin;
    auto result = co_await nodes.fan_out(acquire, call->lease.routing_key(), call->classify, call->quorum, wait_for);
    // Each pass waits for answers the new quorum still needs; answers only accumulate, so it ends.
    while (call->quorum_from && !result->cancelled && !result->expired) {
        const auto q = call->quorum_from(*call, *result);
        if (q == result->tally.quorum()) break;
        result->tally.set_quorum(q);
        result = co_await node_set::outcome(std::move(result), wait_for, deadline);
    }
    co_return result;
}

namespace {
asio::awaitable<attempt_result> same_request_attempt(std::shared_ptr<const lock_call> call,
                                                     std::shared_ptr<const request> acquire, std::uint64_t n)
{
    const auto start = clock::now();
    auto result = co_await fan_out_acquire(call, std::move(acquire));
    co_return co_await conclude_attempt(std::move(call), std::move(result), start, n);
}
}  // namespace

attempt_fn same_request_attempts(std::shared_ptr<const lock_call> call, std::shared_ptr<const request> acquire)
{
    return [call = std::move(call), acquire = std::move(acquire)](std::uint64_t n) {
        return same_request_attempt(call, acquire, n);
    };
}

std::string invalid_arguments(const client_impl& client, const std::vector<std::string>& keys, const lock_options& o,
                              const std::string& owner)
{
    if (client.nodes().size() == 0) return "the client has no nodes";
    if (keys.empty()) return "no key to lock";
    for (const auto& key : keys)
        if (key.empty()) return "a lock key is empty";
    if (o.ttl <= ms(0)) return "ttl must be positive";
    if (o.ttl > lock_options::max_ttl) return "ttl must be at most 30 days (lock_options::max_ttl); use the watchdog";
    if (o.wait < ms(0)) return "wait must not be negative";
    if (o.node_timeout < ms(0) || o.node_timeout >= o.ttl) return "node_timeout must be in [0, ttl)";
    if (o.retry_delay < ms(0) || o.retry_jitter < ms(0)) return "retry_delay and retry_jitter must not be negative";
    if (!(o.drift_factor >= 0.0 && o.drift_factor < 0.5)) return "drift_factor must be in [0, 0.5)";
    if (drift(o.ttl, o.drift_factor) >= o.ttl) return "ttl is too short for the clock drift allowance";
    if (o.min_validity < ms(0) || o.min_validity >= o.ttl) return "min_validity must be in [0, ttl)";
    const auto validity = o.ttl - std::chrono::duration_cast<ms>(drift(o.ttl, o.drift_factor));
    if (o.extend_interval < ms(0) || o.extend_interval >= validity)
        return "extend_interval must be in [0, ttl - drift): the watchdog would extend too late";
    if (o.watchdog && o.extend_interval == ms(0) && o.ttl / 3 >= validity)
        return "ttl is too short for the watchdog: ttl / 3 must be below the validity (ttl - drift)";
    if (o.max_hold < ms(0)) return "max_hold must not be negative";
    if (o.fair || !owner.empty()) {
        if (keys.size() != 1) return "a fair or reentrant lock has exactly one key";
        if (o.fair && !owner.empty()) return "a lock is fair or reentrant, not both";
    }
    if (o.fair && (o.waiter_ttl < ms(100) || o.waiter_ttl > std::chrono::hours(1)))
        return "waiter_ttl must be in [100 ms, 1 h]";
    // The heartbeat budget. A fair waiter heartbeats on a node when its attempt's script runs there: at s, between
    // the request leaving (t) and a node timeout T later (or never: that node has its place again at the next
    // heartbeat that reaches it). The attempt answers by t + T. The next one leaves at most waiter_ttl / 3 after
    // that answer (acquire_loop: the pause and the wait for subscriptions together; a queued waiter skips the
    // client's attempt gate, where other waiters' attempts could hold it any time), and runs on the node by T later.
    // So heartbeats come at most T + waiter_ttl / 3 + T apart, below waiter_ttl iff waiter_ttl > 3 T. (A first
    // attempt over N nodes sends two requests, the ticket's first: it heartbeats with the second, and joins with it.)
    if (o.fair && 3 * (o.node_timeout > ms(0) ? o.node_timeout : default_node_timeout(o.ttl)) >= o.waiter_ttl)
        return "waiter_ttl must be above 3 node timeouts (a fair waiter's heartbeats come up to waiter_ttl / 3 plus "
               "two node timeouts apart)";
    return {};
}

acquire_plan make_plan(const std::vector<std::string>& keys, const lock_options& o, bool one_attempt)
{
    acquire_plan plan;
    for (const auto& key : keys) {
        plan.gate_id.append(key).push_back('\0');
        plan.channels.push_back(release_channel(key));
    }
    const auto now = clock::now();
    // A wait past the clock's range is forever, not an overflow into the past.
    const auto representable = std::chrono::duration_cast<ms>(clock::time_point::max() - now) - std::chrono::hours(24);
    plan.wait_until = one_attempt || o.wait == ms(0) ? now
                      : o.wait >= representable      ? clock::time_point::max()
                                                     : now + o.wait;
    plan.retry_delay = o.retry_delay;
    plan.retry_jitter = o.retry_jitter;
    return plan;
}

const lease_protocol& mutex_protocol()
{
    static const lease_protocol p{
        .extend = lock_scripts::extend_request,
        .extended = lock_scripts::classify_extend,
        .release = lock_scripts::release_request,
        .released = lock_scripts::classify_release,
        .repair =
            [](const lease_spec& lease, ms ttl, ms node_timeout) {
                return lock_scripts::acquire_request(lease.keys, lease.token, ttl, node_timeout);  // no fencing step
            },
        .needs_repair = lock_scripts::lost_key,
        .extend_batch = lock_scripts::extend_batch_request,
    };
    return p;
}

namespace {

std::optional<ms> shortest_holder_ttl(const lock_call& call, const fan_out_state& result)
{
    std::optional<ms> shortest;
    for (std::size_t i = 0; i < result.replies.size(); ++i) {
        if (!result.answered(i) || result.votes[i] != vote::no) continue;
        if (auto t = call.holder_ttl(result.replies[i]); t && (!shortest || *t < *shortest)) shortest = t;
    }
    return shortest;
}

// The token committed to a reentrant owner's holds that a quorum of the granting nodes report alike, or 0. Such a
// token was committed on a quorum: no other holder can commit it (its quorum would meet ours in a node whose
// counter the commit raised), and every later grant reads a counter at or above it. A token reported by fewer
// nodes may be a commit that failed (it reached a minority), and reusing it could give two holders one token.
std::uint64_t committed_on_quorum(const lock_call& call, const fan_out_state& grants, std::size_t quorum)
{
    std::vector<std::uint64_t> committed;
    for (std::size_t i = 0; i < grants.replies.size(); ++i) {
        if (!grants.answered(i) || grants.votes[i] != vote::yes) continue;
        if (auto t = call.committed_fence(grants.replies[i]); t && *t > 0) committed.push_back(*t);
    }
    std::sort(committed.begin(), committed.end(), std::greater<>());
    for (std::size_t i = 0; i < committed.size();) {
        std::size_t same = 1;
        while (i + same < committed.size() && committed[i + same] == committed[i]) ++same;
        if (same >= quorum) return committed[i];
        i += same;
    }
    return 0;
}

// The fencing token of a granted attempt. One node: the token its acquire script issued (the counter it
// incremented; a reentrant hold: the token committed to its owner's holds). N nodes: phase 2, committing 1 + the
// highest counter the granting nodes reported on a quorum before the validity ends (DESIGN.md, "Fencing tokens").
// Nodes that granted after the decision may add their counters: a higher token is as good. A reentrant hold
// keeps the token committed to its owner's holds when a quorum reports it (committed_on_quorum); a hold without
// one (the owner's first hold was taken without fencing, or has not committed yet) commits a token of its own,
// never the counter as it stands, which may be an earlier owner's.
asio::awaitable<std::tuple<error_code, std::uint64_t>> issue_fence(const lock_call& call, const fan_out_state& grants,
                                                                   clock::time_point until)
{
    auto& nodes = call.client->nodes();
    if (call.committed_fence)
        if (const auto held = committed_on_quorum(call, grants, nodes.majority()); held > 0)
            co_return std::tuple{error_code{}, held};
    fence_maximum highest;
    for (std::size_t i = 0; i < grants.replies.size(); ++i) {
        if (!grants.answered(i) || grants.votes[i] != vote::yes) continue;
        if (const auto counter = call.fence_of(grants.replies[i])) highest.add(*counter);
    }
    if (nodes.size() == 1) {  // the acquire script incremented the counter: its value is the token
        if (highest.highest() == 0) co_return std::tuple{make_error_code(error::protocol_error), std::uint64_t{0}};
        co_return std::tuple{error_code{}, highest.highest()};
    }

    const auto fence = highest.next();
    auto commit = std::make_shared<const request>(call.commit(call.lease, fence, call.options.node_timeout));
    auto result = co_await nodes.fan_out(commit, call.lease.routing_key(), lock_scripts::classify_commit,
                                         nodes.majority(), until::decided, until);
    if (result->cancelled) co_return std::tuple{make_error_code(asio::error::operation_aborted), std::uint64_t{0}};
    const auto failure = decide_commit(result->tally, result->expired, until - clock::now(), call.options.min_validity);
    if (failure && call.diag) {
        access::set_nodes(*call.diag, result->outcomes(nodes.names()));
        access::set_client_message(*call.diag, "a quorum granted the lock, but fencing token " + std::to_string(fence) +
                                                   " was not committed on a quorum in time: " +
                                                   tally_text(result->tally, "committed", "refused"));
    }
    co_return std::tuple{failure, fence};
}

}  // namespace

asio::awaitable<attempt_result> conclude_attempt(std::shared_ptr<const lock_call> call,
                                                 std::shared_ptr<fan_out_state> result, clock::time_point start,
                                                 std::uint64_t n)
{
    auto& nodes = call->client->nodes();
    const auto& o = call->options;
    attempt_result out;
    if (result->cancelled) {
        call->release_attempt(n, *result);  // a node may have granted already, or may still
        out.failure = asio::error::operation_aborted;
        co_return out;
    }
    const auto until = valid_until(start, o.ttl, o.drift_factor);
    if (call->diag) access::set_nodes(*call->diag, result->outcomes(nodes.names()));
    out.failure = result->expired && result->tally.decide() == quorum_tally::decision::pending
                      ? make_error_code(error::no_quorum)  // nodes that ignored their deadline
                      : decide_acquire(result->tally, until - clock::now(), o.min_validity);
    out.refused = result->tally.no() > 0;
    out.holder_ttl = shortest_holder_ttl(*call, *result);
    std::string beyond_reach = out.failure && call->beyond_reach ? call->beyond_reach(*call, *result) : "";
    if (!beyond_reach.empty()) {
        out.failure = make_error_code(error::exceeds_limit);
        out.conclusive = true;
    }
    if (out.conclusive && call->diag) {
        access::set_client_message(*call->diag, std::move(beyond_reach));
    } else if (out.failure && call->diag) {
        access::set_client_message(
            *call->diag, out.failure == error::timeout
                             ? "a quorum granted, but only after " +
                                   std::to_string(std::chrono::duration_cast<ms>(clock::now() - start).count()) +
                                   " ms: the validity left was below the minimum"
                             : tally_text(result->tally, "granted", "refused"));
    }
    std::uint64_t fence = 0;
    if (!out.failure && o.fencing) std::tie(out.failure, fence) = co_await issue_fence(*call, *result, until);
    if (out.failure) {
        call->release_attempt(n, *result);  // a late grant may still land on the silent nodes
        for (std::size_t i = 0; i < result->votes.size(); ++i)
            if (result->answered(i) && result->votes[i] == vote::yes) out.granted_on.push_back(i);
        co_return out;
    }
    lease_timing timing{o.ttl, o.drift_factor, o.watchdog, o.extend_interval, o.max_hold, o.node_timeout};
    // The lease keeps the quorum it was granted with.
    out.granted = std::make_shared<lease_state>(call->client, *call->protocol, call->lease, result->tally.quorum(),
                                                timing, fence, start, until);
    out.granted->start();
    co_return out;
}

}  // namespace redlock::detail
