#include "primitives/reentrant/reentrant_lock.hpp"
#include "primitives/reentrant/reentrant_scripts.hpp"

namespace redlock::detail {

namespace {

const lease_protocol& reentrant_protocol()
{
    static const lease_protocol p{
        .extend = reentrant_scripts::extend_request,
        .extended = lock_scripts::classify_extend,
        .release = reentrant_scripts::release_request,
        .released = reentrant_scripts::classify_release,
        // No repair: a hold lives in the hash beside the key, which the mutex's repair cannot rebuild; and no
        // batch: each hold extends alone.
    };
    return p;
}

}  // namespace

void make_reentrant(lock_call& call)
{
    call.classify = reentrant_scripts::classify_acquire;
    call.protocol = &reentrant_protocol();
    call.clean_up = reentrant_scripts::release_request;
    call.fence_of = reentrant_scripts::granted_fence;
    call.committed_fence = reentrant_scripts::committed_fence;
    call.commit = reentrant_scripts::commit_request;
}

attempt_fn reentrant_attempts(std::shared_ptr<const lock_call> call)
{
    // The same request every attempt: the same hold id, so a retry that lands twice adds one hold.
    const auto& lease = call->lease;
    auto acquire = std::make_shared<const request>(
        reentrant_scripts::acquire_request(lease.routing_key(), lease.key_value, lease.token, call->options.ttl,
                                           call->options.node_timeout, call->fence_step));
    return same_request_attempts(std::move(call), std::move(acquire));
}

}  // namespace redlock::detail
