#include "primitives/reentrant/reentrant_lock.hpp"
#include "primitives/reentrant/reentrant_scripts.hpp"

namespace redlock::detail {

namespace asio = boost::asio;

namespace {

asio::awaitable<attempt_result> attempt(std::shared_ptr<const lock_call> call, std::shared_ptr<const request> acquire,
                                        std::uint64_t n)
{
    auto& nodes = call->client->nodes();
    const auto start = std::chrono::steady_clock::now();
    auto result = co_await nodes.fan_out(std::move(acquire), call->keys.front(), reentrant_scripts::classify_acquire,
                                         nodes.majority());
    co_return co_await conclude_attempt(std::move(call), std::move(result), start, n);
}

}  // namespace

void make_reentrant(lock_call& call)
{
    call.key_value = call.owner;
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
    return
        [call = std::move(call), acquire = std::move(acquire)](std::uint64_t n) { return attempt(call, acquire, n); };
}

}  // namespace redlock::detail
