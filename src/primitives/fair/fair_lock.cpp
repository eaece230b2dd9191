// The fair (FIFO) lock, as a lock kind: the plain lock's lease (its keys hold its token), the fair queue's
// acquire and release, and the fair attempts every fair kind shares (primitives/common/fair_attempts.hpp).
#include "primitives/common/fair_attempts.hpp"
#include "primitives/common/lock_kind.hpp"
#include "primitives/common/token_lease.hpp"
#include "primitives/fair/fair_scripts.hpp"

namespace redlock::detail {

namespace {

request fair_lock_acquire(const lock_call& call, std::uint64_t ticket, bool take_ticket)
{
    const auto& o = call.options;
    return fair_scripts::acquire_request(call.lease().routing_key(), call.lease().token, o.ttl, o.waiter_ttl, ticket,
                                         take_ticket, call.fence, o.node_timeout);
}

const lease_protocol& fair_lock_protocol()
{
    static const lease_protocol p{
        .extend = token_lease::extend_request,
        .extended = token_lease::classify_extend,
        .release = fair_scripts::release_and_leave,  // a holder leaves the queue too
        .released = token_lease::classify_release,
        .repair = token_lease::repair_request,
        .needs_repair = token_lease::lost_key,
        .extend_batch = token_lease::extend_batch_request,
        .tracked = true,
    };
    return p;
}

}  // namespace

const lock_kind& fair_lock_kind()
{
    static const lock_kind kind{
        .protocol = &fair_lock_protocol(),
        .read_answer = read_queue_answer,
        .vote = verdict_of<read_queue_answer>,
        .attempts = fair_attempts,
        .clean_up = fair_scripts::release_keeping_place,
        .commit = token_lease::commit_request,
        .fair_acquire = fair_lock_acquire,
    };
    return kind;
}

}  // namespace redlock::detail
