// The distributed mutex: Redlock over the client's N nodes (N = 1 is the same code), with optional fencing.
#include "primitives/common/acquire_loop.hpp"
#include "primitives/common/client_impl.hpp"
#include "primitives/common/decisions.hpp"
#include "primitives/common/lease_state.hpp"
#include "primitives/common/token.hpp"
#include "primitives/common/validity.hpp"
#include "primitives/mutex/fencing.hpp"
#include "primitives/mutex/lock_scripts.hpp"

#include <redlock/detail/access.hpp>
#include <redlock/key_layout.hpp>
#include <redlock/mutex.hpp>

#include <boost/asio/this_coro.hpp>

#include <algorithm>

namespace redlock {
namespace detail {
namespace {

namespace asio = boost::asio;
using clock = std::chrono::steady_clock;
using ms = std::chrono::milliseconds;

// What is wrong with these arguments, or an empty string. Checked before any I/O.
std::string invalid_arguments(const client_impl& client, const std::vector<std::string>& keys, const lock_options& o)
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
    return {};
}

// Everything one lock call's attempts share; immutable once made.
struct lock_call {
    std::shared_ptr<client_impl> client;
    std::vector<std::string> keys;
    std::string token;
    lock_options options;
    lock_scripts::fence_step fence_step = lock_scripts::fence_step::none;
    std::shared_ptr<const request> set_acquire;  // the first attempt's, when it can be one (see attempt())
    diagnostics* diag = nullptr;

    // The script acquire, built when first needed (on the client's strand, as every attempt runs).
    const std::shared_ptr<const request>& script_acquire() const
    {
        if (!script_acquire_)
            script_acquire_ = std::make_shared<const request>(
                lock_scripts::acquire_request(keys, token, options.ttl, options.node_timeout, fence_step));
        return script_acquire_;
    }

    // The clean-up of attempt n, on all N nodes; its own release id, so waiters never drop the holder's real
    // release as a copy of it.
    void release_attempt(std::uint64_t n) const
    {
        client->nodes().send_to_all(std::make_shared<const request>(lock_scripts::release_request(
                                        keys, token, token + ":" + std::to_string(n), options.node_timeout)),
                                    keys.front());
    }

    // The lease it grants: built from the lease's own keys and token, so the lease keeps nothing of this call.
    lease_protocol protocol() const
    {
        lease_protocol p;
        p.routing_key = keys.front();
        p.quorum = client->nodes().majority();
        p.extend = lock_scripts::extend_request;
        p.extended = lock_scripts::classify_extend;
        p.release = lock_scripts::release_request;
        p.released = lock_scripts::classify_release;
        p.repair = [](const std::vector<std::string>& keys, const std::string& token, ms ttl, ms node_timeout) {
            return lock_scripts::acquire_request(keys, token, ttl, node_timeout);  // no fencing step
        };
        p.needs_repair = lock_scripts::lost_key;
        p.extend_batch = lock_scripts::extend_batch_request;
        return p;
    }

private:
    mutable std::shared_ptr<const request> script_acquire_;
};

std::optional<ms> shortest_holder_ttl(const fan_out_state& result)
{
    std::optional<ms> shortest;
    for (std::size_t i = 0; i < result.replies.size(); ++i) {
        if (!result.answered(i) || result.votes[i] != vote::no) continue;
        if (auto t = lock_scripts::holder_ttl(result.replies[i]); t && (!shortest || *t < *shortest)) shortest = t;
    }
    return shortest;
}

// The fencing token of a granted attempt. One node: the counter its acquire script incremented. N nodes:
// phase 2, committing 1 + the highest counter the granting nodes reported on a quorum before the validity
// ends (DESIGN.md, "Fencing tokens"). Nodes that granted after the decision may add their counters: a higher
// token is as good.
asio::awaitable<std::tuple<error_code, std::uint64_t>> issue_fence(const lock_call& call, const fan_out_state& grants,
                                                                   clock::time_point until)
{
    auto& nodes = call.client->nodes();
    fence_maximum highest;
    for (std::size_t i = 0; i < grants.replies.size(); ++i) {
        if (!grants.answered(i) || grants.votes[i] != vote::yes) continue;
        if (auto counter = lock_scripts::granted_fence(grants.replies[i])) highest.add(*counter);
    }
    if (nodes.size() == 1) {  // the acquire script incremented the counter: its value is the token
        if (highest.highest() == 0) co_return std::tuple{make_error_code(error::protocol_error), std::uint64_t{0}};
        co_return std::tuple{error_code{}, highest.highest()};
    }

    const auto fence = highest.next();
    auto result = co_await nodes.fan_out(std::make_shared<const request>(lock_scripts::commit_request(
                                             call.keys, call.token, fence, call.options.node_timeout)),
                                         call.keys.front(), lock_scripts::classify_commit, nodes.majority(),
                                         until::decided, until);
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

// Sends attempt n's acquire to every node. The first attempt of a plain lock uses SET NX GET (a script costs
// the server several times more); later attempts run the script, whose re-grant of our own token is idempotent
// (a grant of an earlier attempt may have survived its clean-up). A node that rejects the SET (a server older
// than its version told, an ACL without PTTL, a proxy) turns the client to scripts; unless a quorum granted
// anyway, the attempt goes on with the script at once (it re-grants our token where the SET granted, and a
// failed attempt releases everywhere as always).
asio::awaitable<std::shared_ptr<fan_out_state>> acquire_on_nodes(const lock_call& call, std::uint64_t n)
{
    auto& nodes = call.client->nodes();
    const auto& key = call.keys.front();
    if (n == 1 && call.set_acquire && call.client->plain_acquire_usable()) {
        auto result =
            co_await nodes.fan_out(call.set_acquire, key, lock_scripts::classify_set_acquire, nodes.majority());
        bool rejected = false;
        for (std::size_t i = 0; i < result->replies.size(); ++i)  // only answered nodes: the others still write
            rejected = rejected || (result->answered(i) && lock_scripts::set_acquire_rejected(result->replies[i]));
        if (result->cancelled || !rejected) co_return result;
        call.client->reject_plain_acquire();
        if (result->tally.decide() == quorum_tally::decision::reached) co_return result;
    }
    co_return co_await nodes.fan_out(call.script_acquire(), key, lock_scripts::classify_acquire, nodes.majority());
}

asio::awaitable<attempt_result> attempt(std::shared_ptr<const lock_call> call, std::uint64_t n)
{
    auto& nodes = call->client->nodes();
    const auto& o = call->options;
    const auto start = clock::now();
    auto result = co_await acquire_on_nodes(*call, n);
    attempt_result out;
    if (result->cancelled) {
        call->release_attempt(n);  // a node may have granted already, or may still
        out.failure = asio::error::operation_aborted;
        co_return out;
    }
    const auto until = valid_until(start, o.ttl, o.drift_factor);
    if (call->diag) access::set_nodes(*call->diag, result->outcomes(nodes.names()));
    out.failure = result->expired && result->tally.decide() == quorum_tally::decision::pending
                      ? make_error_code(error::no_quorum)  // nodes that ignored their deadline
                      : decide_acquire(result->tally, until - clock::now(), o.min_validity);
    out.refused = result->tally.no() > 0;
    out.holder_ttl = shortest_holder_ttl(*result);
    if (out.failure && call->diag) {
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
        call->release_attempt(n);  // on all N nodes: a late grant may still land on the silent ones
        co_return out;
    }
    lease_timing timing{o.ttl, o.drift_factor, o.watchdog, o.extend_interval, o.max_hold, o.node_timeout};
    out.granted = std::make_shared<lease_state>(call->client, call->protocol(), timing, call->keys, call->token, fence,
                                                start, until);
    out.granted->start();
    co_return out;
}

asio::awaitable<std::tuple<error_code, lease>> lock(std::shared_ptr<client_impl> client, std::vector<std::string> keys,
                                                    lock_options o, bool one_attempt, diagnostics* diag)
{
    // Total and partial cancellation too: a cancelled attempt cleans up after itself.
    co_await asio::this_coro::reset_cancellation_state(asio::enable_total_cancellation());
    if (diag) diag->clear();
    if (auto why = invalid_arguments(*client, keys, o); !why.empty()) {
        if (diag) access::set_client_message(*diag, why);
        co_return std::tuple{make_error_code(error::invalid_argument), lease{}};
    }
    if (o.node_timeout == ms(0)) o.node_timeout = default_node_timeout(o.ttl);

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

    auto call = std::make_shared<lock_call>();
    call->client = client;
    call->keys = std::move(keys);
    call->token = random_token();
    call->options = o;
    call->fence_step = !o.fencing                    ? lock_scripts::fence_step::none
                       : client->nodes().size() == 1 ? lock_scripts::fence_step::increment
                                                     : lock_scripts::fence_step::read;
    // A node whose version is not known yet (not connected) gets the SET too: if it is older, its syntax error
    // turns the client to scripts (acquire_on_nodes).
    constexpr std::uint32_t set_nx_get_since = 70000;  // Redis 7.0
    if (call->keys.size() == 1 && !o.fencing && client->nodes().none_known_older_than(set_nx_get_since))
        call->set_acquire = std::make_shared<const request>(
            lock_scripts::set_acquire_request(call->keys.front(), call->token, o.ttl, o.node_timeout));
    call->diag = diag;

    // Named, not a temporary inside the co_await: g++ 12 destroys such temporaries twice (a shared_ptr
    // released twice showed it).
    attempt_fn each_attempt = [call = std::shared_ptr<const lock_call>(call)](std::uint64_t n) {
        return attempt(call, n);
    };
    auto outcome = co_await acquire_loop(client, std::move(plan), std::move(each_attempt), diag);
    auto& [ec, state] = outcome;
    co_return std::tuple{ec, state ? access::make<lease>(std::move(state)) : lease{}};
}

}  // namespace

void start_lock(const std::shared_ptr<client_impl>& client, std::vector<std::string> keys, lock_options options,
                bool one_attempt, diagnostics* diag, lock_handler handler)
{
    // Every cancellation type is safe here: a cancelled attempt releases what it may hold.
    spawn_op<lease>(client->strand(), client->io_executor(), lock(client, std::move(keys), options, one_attempt, diag),
                    std::move(handler));
}

}  // namespace detail

mutex::mutex(const client& c, std::string key, lock_options options)
    : mutex(c, std::vector<std::string>{std::move(key)}, options)
{}

mutex::mutex(const client& c, std::vector<std::string> keys, lock_options options)
    : impl_(detail::access::impl(c)), keys_(std::move(keys)), options_(options)
{}

}  // namespace redlock
