#include "primitives/reentrant/reentrant_lock.hpp"
#include "primitives/reentrant/reentrant_scripts.hpp"

namespace redlock::detail {

void make_reentrant(lock_call& call)
{
    call.key_value = call.owner;
    call.classify = reentrant_scripts::classify_acquire;
    call.protocol.extend = reentrant_scripts::extend_request;
    call.protocol.release = reentrant_scripts::release_request;
    call.protocol.released = reentrant_scripts::classify_release;
    call.protocol.repair = nullptr;  // a hold lives in the set beside the key: the mutex's repair cannot rebuild it
    call.protocol.needs_repair = nullptr;
    call.protocol.extend_batch = nullptr;  // each hold extends alone
    call.clean_up = reentrant_scripts::release_request;
    call.fence_of = reentrant_scripts::granted_fence;
    call.reentered = reentrant_scripts::reentered;
}

attempt_fn reentrant_attempts(std::shared_ptr<const lock_call> call)
{
    // The same request every attempt: the same hold id, so a retry that lands twice adds one hold.
    auto acquire = std::make_shared<const request>(reentrant_scripts::acquire_request(
        call->keys.front(), call->owner, call->token, call->options.ttl, call->options.node_timeout, call->fence_step));
    return same_request_attempts(std::move(call), std::move(acquire));
}

}  // namespace redlock::detail
