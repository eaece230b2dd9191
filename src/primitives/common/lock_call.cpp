#include "primitives/common/decisions.hpp"
#include "primitives/common/fair_attempts.hpp"
#include "primitives/common/lease_state.hpp"
#include "primitives/common/lock_call.hpp"
#include "primitives/common/token_lease.hpp"
#include "primitives/common/validity.hpp"

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
        std::make_shared<const request>(kind->clean_up(lease(), clean_up_id(lease().token, n), options.node_timeout)),
        lease().routing_key());
}

namespace {
// The kind's quorum_from applied again as answers come in: each pass waits for answers the new quorum still needs;
// answers only accumulate, so it ends.
asio::awaitable<std::shared_ptr<fan_out_state>> requorum(std::shared_ptr<const lock_call> call,
                                                         asio::awaitable<std::shared_ptr<fan_out_state>> first,
                                                         until wait_for, clock::time_point deadline)
{
    auto result = co_await std::move(first);
    while (!result->cancelled && !result->expired) {
        const auto q = call->kind->quorum_from(*call, *result);
        if (q == result->tally.quorum()) break;
        result->tally.set_quorum(q);
        result = co_await node_set::outcome(std::move(result), wait_for, deadline);
    }
    co_return result;
}
}  // namespace

asio::awaitable<std::shared_ptr<fan_out_state>> fan_out_acquire(std::shared_ptr<const lock_call> call,
                                                                std::shared_ptr<const request> acquire, until wait_for)
{
    auto& nodes = call->client->nodes();
    // A copy per attempt, only with acknowledgement on: the WAIT's round trip to the replicas dwarfs it.
    if (call->acks.on()) acquire = std::make_shared<const request>(acknowledged(*acquire, call->acks));
    const auto deadline = clock::now() + acquire->timeout() + node_set::backstop_margin;
    const auto& kind = *call->kind;
    // Not a coroutine itself: most kinds need no frame of their own here. Its by-value parameters are moved from:
    // they are temporaries of the caller's co_await, which hold nothing then.
    auto first = nodes.fan_out(std::move(acquire), call->lease().routing_key(), kind.vote, call->quorum, wait_for,
                               clock::time_point::max(), call->acks);
    if (!kind.quorum_from) return first;
    return requorum(std::move(call), std::move(first), wait_for, deadline);
}

namespace {
asio::awaitable<attempt_result> same_request_attempt(std::shared_ptr<const lock_call> call,
                                                     std::shared_ptr<const request> acquire, std::uint64_t n)
{
    const auto start = clock::now();
    auto result = co_await fan_out_acquire(call, std::move(acquire));
    if (!call->options.fencing) co_return conclude_unfenced_attempt(call, *result, start, n);
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
    if (auto why = o.invalid(); !why.empty()) return why;
    if (o.replica_acks > 0) {
        // A WAIT that blocks a connection this long reads as a dead server to its health check, which would close it.
        const auto node_timeout = o.node_timeout > ms(0) ? o.node_timeout : default_node_timeout(o.ttl);
        for (const auto& config : client.nodes().configs())
            if (request_time(node_timeout, o.replica_acks, o.replica_ack_timeout) >= config.health_check_timeout)
                return "node_timeout + replica_ack_timeout must be below every node's health_check_timeout (a "
                       "connection whose WAIT blocks that long is taken for dead)";
    }
    if (o.fair || !owner.empty()) {
        if (keys.size() != 1) return "a fair or reentrant lock has exactly one key";
        if (o.fair && !owner.empty()) return "a lock is fair or reentrant, not both";
    }
    // A reentrant owner's holds store its name in the key: this one would take the readers' hold for its own.
    if (owner == readers_marker) return "the owner '" + owner + "' is what a read-write lock's key holds for readers";
    return {};
}

namespace {

// When the call gives up, and how it sleeps between attempts. `waits`: it may make more than one attempt (not a try,
// and a wait above 0; the options are checked, so never below).
acquire_plan make_plan(const lock_call& call, bool waits)
{
    const auto& o = call.options;
    acquire_plan plan;
    for (const auto& key : call.lease().keys) {
        plan.gate_id.append(key).push_back('\0');
        if (waits) plan.channels.push_back(release_channel(key));  // a try hears no release: it does not wait
    }
    const auto now = clock::now();
    // A wait past the clock's range is forever, not an overflow into the past.
    const auto representable = std::chrono::duration_cast<ms>(clock::time_point::max() - now) - std::chrono::hours(24);
    plan.wait_until = !waits ? now : o.wait >= representable ? clock::time_point::max() : now + o.wait;
    plan.retry_delay = o.retry_delay;
    plan.retry_jitter = o.retry_jitter;
    plan.shared = call.kind->shared;
    // Keys that hold one holder's value: a semaphore's permits and a read-write lock's name are written by every
    // holder, and their news would wake the waiters at each holder's step.
    plan.key_news = call.kind->protocol->tracked && !call.kind->marks_wait && !call.kind->shared;
    if (call.kind->fair()) fair_plan(call, plan);
    if (call.kind->marks_wait) plan.max_pause = o.waiter_ttl / 3;  // each attempt renews the mark
    return plan;
}

}  // namespace

replica_acks acks_of(const lock_options& o) noexcept
{
    if (o.replica_acks <= 0) return {};
    return {static_cast<std::uint32_t>(o.replica_acks), replica_wait(o.node_timeout, o.replica_ack_timeout)};
}

std::shared_ptr<lock_call> make_call(std::shared_ptr<client_impl> client, const lock_kind& kind, lease_spec lease,
                                     lock_options o, std::size_t quorum, diagnostics* diag)
{
    auto call = std::make_shared<lock_call>();
    if (o.node_timeout == ms(0)) o.node_timeout = default_node_timeout(o.ttl);
    call->fence = !o.fencing                    ? fence_step::none
                  : client->nodes().size() == 1 ? fence_step::increment
                                                : fence_step::read;
    call->client = std::move(client);
    call->kind = &kind;
    call->spec = std::make_shared<const lease_spec>(std::move(lease));
    call->options = o;
    call->acks = acks_of(o);
    call->quorum = quorum;
    call->diag = diag;
    return call;
}

namespace {
// The acquire loop of a call that may leave a queue when it fails (a try never joined one).
asio::awaitable<std::tuple<error_code, std::shared_ptr<lease_state>>> run_in_line(std::shared_ptr<const lock_call> call,
                                                                                  acquire_plan plan,
                                                                                  attempt_fn attempts)
{
    // Named, not temporaries inside the co_await: g++ 12 destroys such temporaries twice (a shared_ptr released
    // twice showed it).
    auto client = call->client;
    auto outcome = co_await acquire_loop(std::move(client), std::move(plan), std::move(attempts), call->diag);
    if (std::get<0>(outcome)) leave_queue(*call);
    co_return outcome;
}
}  // namespace

asio::awaitable<std::tuple<error_code, std::shared_ptr<lease_state>>> run_call(std::shared_ptr<const lock_call> call,
                                                                               bool one_attempt)
{
    const bool waits = !one_attempt && call->options.wait > ms(0);
    auto plan = make_plan(*call, waits);
    auto attempts = call->kind->attempts(call, waits);
    if (call->kind->waits_in_line() && waits) return run_in_line(std::move(call), std::move(plan), std::move(attempts));
    // The attempts hold the call; the loop is the call's frame (one frame less per lock). `call` is moved from, as
    // fan_out_acquire's parameters are.
    auto* diag = call->diag;
    auto client = call->client;
    call.reset();
    return acquire_loop(std::move(client), std::move(plan), std::move(attempts), diag);
}

namespace {

// Each answered node's answer to an attempt, read once.
using answers = std::vector<std::optional<acquire_answer>>;

answers read_answers(const lock_kind& kind, const fan_out_state& result)
{
    answers out(result.replies.size());
    for (std::size_t i = 0; i < out.size(); ++i)
        if (result.answered(i)) out[i] = kind.read_answer(*result.results[i], result.replies[i]);
    return out;
}

// The answers of the nodes that voted `v`, and that said what `field` reads.
template <class T, class Field>
std::vector<T> reported(const answers& all, vote v, Field field)
{
    std::vector<T> out;
    for (const auto& a : all)
        if (a && a->verdict == v)
            if (const auto& value = (*a).*field) out.push_back(*value);
    return out;
}

std::optional<ms> shortest_wait(const answers& all)
{
    const auto waits = reported<ms>(all, vote::no, &acquire_answer::wait);
    if (waits.empty()) return std::nullopt;
    return *std::min_element(waits.begin(), waits.end());
}

// "the writes of 2 node(s) were not acknowledged by 1 replica(s) within 50 ms, ...; ", or nothing when every yes
// was acknowledged (how many replicas did on each node: diagnostics::nodes()).
std::string acks_text(const replica_acks& acks, const fan_out_state& result)
{
    const auto unacknowledged = result.unacknowledged();
    if (unacknowledged == 0) return {};
    return "the writes of " + std::to_string(unacknowledged) + " node(s) were not acknowledged by " +
           std::to_string(acks.replicas) + " replica(s) within " + std::to_string(acks.timeout.count()) +
           " ms, so they did not count (released there); ";
}

// The token committed to a reentrant owner's holds that a quorum of the granting nodes report alike, or 0. Such a
// token was committed on a quorum: no other holder can commit it (its quorum would meet ours in a node whose
// counter the commit raised), and every later grant reads a counter at or above it. A token reported by fewer
// nodes may be a commit that failed (it reached a minority), and reusing it could give two holders one token.
std::uint64_t committed_on_quorum(const answers& all, std::size_t quorum)
{
    auto committed = reported<std::uint64_t>(all, vote::yes, &acquire_answer::committed);
    std::erase(committed, 0);
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
asio::awaitable<std::tuple<error_code, std::uint64_t>> issue_fence(const lock_call& call, const answers& granted,
                                                                   clock::time_point until)
{
    auto& nodes = call.client->nodes();
    if (const auto held = committed_on_quorum(granted, nodes.majority()); held > 0)
        co_return std::tuple{error_code{}, held};
    fence_maximum highest;
    for (const auto counter : reported<std::uint64_t>(granted, vote::yes, &acquire_answer::fence)) highest.add(counter);
    if (nodes.size() == 1) {  // the acquire script incremented the counter: its value is the token
        if (highest.highest() == 0) co_return std::tuple{make_error_code(error::protocol_error), std::uint64_t{0}};
        co_return std::tuple{error_code{}, highest.highest()};
    }

    const auto fence = highest.next();
    // A token that a promoted replica lacks could be issued twice: the commit waits for the replicas as the grant did.
    auto commit = std::make_shared<const request>(call.kind->commit(call.lease(), fence, call.options.node_timeout));
    if (call.acks.on()) commit = std::make_shared<const request>(acknowledged(*commit, call.acks));
    auto result = co_await nodes.fan_out(commit, call.lease().routing_key(), token_lease::classify_commit,
                                         nodes.majority(), until::decided, until, call.acks);
    if (result->cancelled) co_return std::tuple{make_error_code(asio::error::operation_aborted), std::uint64_t{0}};
    const auto failure =
        for_want_of_acks(decide_commit(result->tally, result->expired, until - clock::now(), call.options.min_validity),
                         result->tally, result->unacknowledged());
    if (failure && call.diag) {
        result->report(*call.diag, nodes.names());
        access::set_client_message(*call.diag,
                                   "a quorum granted the lock, but fencing token " + std::to_string(fence) +
                                       " was not committed on a quorum in time: " + acks_text(call.acks, *result) +
                                       tally_text(result->tally, "committed", "refused"));
    }
    co_return std::tuple{failure, fence};
}

}  // namespace

namespace {

// What an attempt's answers decide before any fencing token: the failure, if any (with its text in the
// diagnostics), and what the acquire loop reads of the refusals.
struct decided_attempt {
    attempt_result out;
    answers answered;
    clock::time_point until;
};

decided_attempt decide_attempt(const lock_call& call, const fan_out_state& result, clock::time_point start)
{
    const auto& o = call.options;
    const auto& kind = *call.kind;
    decided_attempt d;
    auto& out = d.out;
    d.until = valid_until(start, o.ttl, o.drift_factor);
    if (call.diag) result.report(*call.diag, call.client->nodes().names());
    out.failure = result.expired && result.tally.decide() == quorum_tally::decision::pending
                      ? make_error_code(error::no_quorum)  // nodes that ignored their deadline
                      : decide_acquire(result.tally, d.until - clock::now(), o.min_validity);
    out.failure = for_want_of_acks(out.failure, result.tally, result.unacknowledged());
    d.answered = read_answers(kind, result);
    out.refused = result.tally.no() > 0;
    out.holder_ttl = shortest_wait(d.answered);
    std::string beyond_reach = out.failure && kind.beyond_reach ? kind.beyond_reach(call, result) : "";
    if (!beyond_reach.empty()) {
        out.failure = make_error_code(error::exceeds_limit);
        out.conclusive = true;
    }
    if (out.conclusive && call.diag) {
        access::set_client_message(*call.diag, std::move(beyond_reach));
    } else if (out.failure && call.diag) {
        access::set_client_message(
            *call.diag, out.failure == error::timeout
                            ? "a quorum granted, but only after " +
                                  std::to_string(std::chrono::duration_cast<ms>(clock::now() - start).count()) +
                                  " ms: the validity left was below the minimum"
                            : acks_text(call.acks, result) + tally_text(result.tally, "granted", "refused"));
    }
    return d;
}

// The end of a decided attempt: a failed one sends its clean-up, a granted one becomes the lease.
attempt_result finish_attempt(const std::shared_ptr<const lock_call>& call, const fan_out_state& result,
                              decided_attempt d, std::uint64_t fence, clock::time_point start, std::uint64_t n)
{
    auto& out = d.out;
    if (out.failure) {
        call->release_attempt(n, result);  // a late grant may still land on the silent nodes
        for (std::size_t i = 0; i < result.votes.size(); ++i)
            if (result.answered(i) && result.votes[i] == vote::yes) out.granted_on.push_back(i);
        return std::move(out);
    }
    const auto& o = call->options;
    lease_timing timing{o.ttl, o.drift_factor, o.watchdog, o.extend_interval, o.max_hold, o.node_timeout, call->acks};
    // The lease keeps the quorum it was granted with.
    out.granted = std::make_shared<lease_state>(call->client, *call->kind->protocol, call->spec, result.tally.quorum(),
                                                timing, fence, start, d.until);
    out.granted->start();
    return std::move(out);
}

attempt_result aborted_attempt(const lock_call& call, const fan_out_state& result, std::uint64_t n)
{
    call.release_attempt(n, result);  // a node may have granted already, or may still
    attempt_result out;
    out.failure = asio::error::operation_aborted;
    return out;
}

}  // namespace

attempt_result conclude_unfenced_attempt(const std::shared_ptr<const lock_call>& call, const fan_out_state& result,
                                         clock::time_point start, std::uint64_t n)
{
    if (result.cancelled) return aborted_attempt(*call, result, n);
    return finish_attempt(call, result, decide_attempt(*call, result, start), 0, start, n);
}

asio::awaitable<attempt_result> conclude_attempt(std::shared_ptr<const lock_call> call,
                                                 std::shared_ptr<fan_out_state> result, clock::time_point start,
                                                 std::uint64_t n)
{
    if (result->cancelled) co_return aborted_attempt(*call, *result, n);
    auto decided = decide_attempt(*call, *result, start);
    std::uint64_t fence = 0;
    if (!decided.out.failure && call->options.fencing)
        std::tie(decided.out.failure, fence) = co_await issue_fence(*call, decided.answered, decided.until);
    co_return finish_attempt(call, *result, std::move(decided), fence, start, n);
}

}  // namespace redlock::detail
