// The plain lock, as a lock kind: its first attempt sends SET NX GET where it can, later ones the acquire script.
#include "primitives/common/lock_call.hpp"
#include "primitives/common/lock_kind.hpp"
#include "primitives/common/token_lease.hpp"
#include "primitives/mutex/plain_scripts.hpp"

namespace redlock::detail {

namespace {

namespace asio = boost::asio;
using clock = std::chrono::steady_clock;

// A plain lock call: the script acquire, and the plain-command acquire for a first attempt that can use it.
struct plain_lock {
    std::shared_ptr<const lock_call> call;
    std::shared_ptr<const request> set_acquire;  // the first attempt's, when it can be one (see acquire_on_nodes)

    // The script acquire, built when first needed (on the client's strand, as every attempt runs).
    const std::shared_ptr<const request>& script_acquire() const
    {
        if (!script_acquire_)
            script_acquire_ = std::make_shared<const request>(plain_scripts::acquire_request(
                call->lease().keys, call->lease().token, call->options.ttl, call->options.node_timeout, call->fence));
        return script_acquire_;
    }

private:
    mutable std::shared_ptr<const request> script_acquire_;
};

// Attempt n: its acquire to every node, then the common conclusion. The first attempt of a plain lock uses SET NX GET
// (a script costs the server several times more); later attempts run the script, whose re-grant of our own token is
// idempotent (a grant of an earlier attempt may have survived its clean-up). A node that rejects the SET (a server
// older than its version told, an ACL without PTTL, a proxy) turns the client to scripts; unless a quorum granted
// anyway, the attempt goes on with the script at once (it re-grants our token where the SET granted, and a failed
// attempt releases everywhere as always). One coroutine frame per attempt: this is every lock's path.
asio::awaitable<attempt_result> attempt(std::shared_ptr<const plain_lock> lock, std::uint64_t n)
{
    const auto start = clock::now();
    const auto& call = *lock->call;
    std::shared_ptr<fan_out_state> result;
    if (n == 1 && lock->set_acquire && call.client->plain_acquire_usable()) {
        result = co_await fan_out_acquire(lock->call, lock->set_acquire);
        bool rejected = false;
        for (std::size_t i = 0; i < result->replies.size(); ++i)  // only answered nodes: the others still write
            rejected = rejected || (result->answered(i) && plain_scripts::set_acquire_rejected(result->replies[i]));
        if (!result->cancelled && rejected) {
            call.client->reject_plain_acquire();
            call.client->log(log_level::info,
                             "a node rejected the plain SET NX acquire: this client acquires by script");
            if (result->tally.decide() != quorum_tally::decision::reached) result = nullptr;
        }
    }
    if (!result) result = co_await fan_out_acquire(lock->call, lock->script_acquire());
    if (!call.options.fencing) co_return conclude_unfenced_attempt(lock->call, *result, start, n);
    co_return co_await conclude_attempt(lock->call, std::move(result), start, n);
}

attempt_fn plain_attempts(std::shared_ptr<const lock_call> call, bool)
{
    auto lock = std::make_shared<plain_lock>();
    // A node whose server is not known yet (not connected) gets the SET too: if it lacks it, its syntax error
    // turns the client to scripts (acquire_on_nodes).
    const auto& o = call->options;
    if (call->lease().keys.size() == 1 && call->fence == fence_step::none &&
        call->client->nodes().none_known_lacking(&server_identity::has_set_nx_get))
        lock->set_acquire = std::make_shared<const request>(plain_scripts::set_acquire_request(
            call->lease().routing_key(), call->lease().token, o.ttl, o.node_timeout));
    lock->call = std::move(call);
    return [lock = std::shared_ptr<const plain_lock>(std::move(lock))](std::uint64_t n) { return attempt(lock, n); };
}

const lease_protocol& plain_lock_protocol()
{
    static const lease_protocol p{
        .extend = token_lease::extend_request,
        .extended = token_lease::classify_extend,
        .release = plain_scripts::release_request,
        .released = token_lease::classify_release,
        .repair = token_lease::repair_request,
        .needs_repair = token_lease::lost_key,
        .extend_batch = token_lease::extend_batch_request,
        .tracked = true,
    };
    return p;
}

}  // namespace

const lock_kind& plain_lock_kind()
{
    static const lock_kind kind{
        .protocol = &plain_lock_protocol(),
        .read_answer = plain_scripts::read_acquire,
        .vote = verdict_of<plain_scripts::read_acquire>,
        .attempts = plain_attempts,
        .clean_up = plain_scripts::release_request,
        .commit = token_lease::commit_request,
    };
    return kind;
}

}  // namespace redlock::detail
