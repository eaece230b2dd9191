// The reentrant lock, as a lock kind: an owner named by the caller takes the lock again while it holds it. The key
// holds the owner, each hold is a lease of its own (its token the hold's id), and a fenced hold keeps the token
// committed to its owner's holds.
#include "primitives/common/lock_call.hpp"
#include "primitives/common/lock_kind.hpp"
#include "primitives/reentrant/reentrant_scripts.hpp"

namespace redlock::detail {

namespace {

attempt_fn reentrant_attempts(std::shared_ptr<const lock_call> call, bool)
{
    // The same request every attempt: the same hold id, so a retry that lands twice adds one hold.
    const auto& lease = call->lease();
    auto acquire = std::make_shared<const request>(reentrant_scripts::acquire_request(
        lease.routing_key(), lease.key_value, lease.token, call->options.ttl, call->options.node_timeout, call->fence));
    return same_request_attempts(std::move(call), std::move(acquire));
}

const lease_protocol& reentrant_protocol()
{
    static const lease_protocol p{
        .extend = reentrant_scripts::extend_request,
        .extended = reentrant_scripts::classify_extend,
        .release = reentrant_scripts::release_request,
        .released = reentrant_scripts::classify_release,
        .tracked = true,
        // No repair: a hold lives in the hash beside the key, which a repair of the key alone cannot rebuild; and
        // no batch: each hold extends alone.
    };
    return p;
}

}  // namespace

const lock_kind& reentrant_lock_kind()
{
    static const lock_kind kind{
        .protocol = &reentrant_protocol(),
        .read_answer = reentrant_scripts::read_acquire,
        .vote = verdict_of<reentrant_scripts::read_acquire>,
        .attempts = reentrant_attempts,
        .clean_up = reentrant_scripts::release_request,
        .commit = reentrant_scripts::commit_request,
    };
    return kind;
}

}  // namespace redlock::detail
