// What makes one kind of lock what it is (a plain, fair or reentrant lock, a semaphore's permit, plain or fair, a
// side of a read-write lock): one constant description, defined in the kind's own folder. The call, its attempts, its
// conclusion and the lease machinery in primitives/common/ work from the description alone, so no primitive folder
// includes another.
#pragma once

#include "primitives/common/acquire_loop.hpp"
#include "primitives/common/lease_protocol.hpp"
#include "quorum/tally.hpp"

#include <redlock/error.hpp>
#include <redlock/request.hpp>
#include <redlock/response.hpp>

#include <chrono>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace redlock::detail {

struct lock_call;
struct fan_out_state;

/// One node's answer to an acquire, read once into what every step after it needs.
struct acquire_answer {
    vote verdict = vote::error;  ///< granted, refused, or failed (an error, or a reply of the wrong shape)
    /// Refused: when the lock may change without a release message (the holder's PTTL; a fair queue: also when the
    /// first waiter's heartbeat ends; a semaphore: when enough permits expire).
    std::optional<std::chrono::milliseconds> wait;
    std::optional<std::uint64_t> fence;      ///< granted with fencing: the node's counter (one node: the token)
    std::optional<std::uint64_t> committed;  ///< a reentrant grant: the token committed to the owner's holds (0: none)
    std::optional<std::uint64_t> ticket_counter;  ///< a fair queue: the highest ticket the node has seen
    std::optional<std::uint64_t> ticket;          ///< a fair queue on one node: the ticket it handed out when refusing
    std::optional<std::int64_t> limit;            ///< a semaphore: the limit the node stores
};

/// A refusal that says -(the holder's PTTL): how long that holder's key lives; nothing for 0 (a key without TTL).
inline std::optional<std::chrono::milliseconds> wait_of_refusal(std::int64_t n) noexcept
{
    if (n >= 0) return std::nullopt;
    if (n == std::numeric_limits<std::int64_t>::min()) return std::chrono::milliseconds::max();  // no -n
    return std::chrono::milliseconds(-n);
}

/// Reads an answer; the kind's only parser of its acquire's replies.
using read_answer_fn = acquire_answer (*)(error_code ec, const response& resp);

/// The vote alone, as the quorum layer's tally wants a classifier: verdict_of<read>.
template <read_answer_fn Read>
vote verdict_of(error_code ec, const response& resp)
{
    return Read(ec, resp).verdict;
}

struct lock_kind {
    using ms = std::chrono::milliseconds;

    /// How the lease a grant makes is extended, released and repaired.
    const lease_protocol* protocol = nullptr;
    /// The kind's acquire answers: read_answer once per reply, and its vote for the tally.
    read_answer_fn read_answer = nullptr;
    classify_fn vote = nullptr;
    /// The attempts of one call (`waits`: it may take more than one attempt, not a try), each ending in
    /// conclude_attempt (lock_call.hpp).
    attempt_fn (*attempts)(std::shared_ptr<const lock_call> call, bool waits) = nullptr;
    /// A failed attempt's clean-up, sent to the nodes that may have granted it: the kind's release, with the
    /// attempt's clean-up id (a fair waiter keeps its place).
    request (*clean_up)(const lease_spec& lease, std::string_view release_id, ms node_timeout) = nullptr;
    /// Fencing over N nodes, phase 2: commits `fence` where the lease still holds its keys. Null: no fencing.
    request (*commit)(const lease_spec& lease, std::uint64_t fence, ms node_timeout) = nullptr;
    /// A fair kind: the acquire of a waiter holding `ticket` (0: none yet; `take_ticket`: a single node hands one
    /// out when it refuses). Its waiters queue, heartbeat and leave (fair_attempts.hpp). Null: not fair.
    request (*fair_acquire)(const lock_call& call, std::uint64_t ticket, bool take_ticket) = nullptr;
    /// A semaphore: the quorum the answers so far call for (from the limits the nodes report, which a set_limit may
    /// have changed since the call was made). Null: the call's quorum stands.
    std::size_t (*quorum_from)(const lock_call& call, const fan_out_state& answers) = nullptr;
    /// A semaphore: why no wait can turn this refusal into a grant (permits above the limit the refusing nodes
    /// store); the call then ends at once with error::exceeds_limit. Null, or an empty answer: it may pass.
    std::string (*beyond_reach)(const lock_call& call, const fan_out_state& answers) = nullptr;

    /// A kind whose waiters mark their wait on the nodes (a read-write lock's writer, whom new readers wait behind).
    /// As a fair waiter's place, a mark lasts options.waiter_ttl from each attempt: a waiter pauses at most a third
    /// of it between attempts, and one that gives up takes its mark away (leave_queue).
    bool marks_wait = false;
    /// A read-write lock's reader: releases that only a writer can pass ("=w", release_wakeups) leave its waiters
    /// asleep.
    bool shared = false;

    bool fair() const noexcept { return fair_acquire != nullptr; }
    /// Its waiters hold something on the nodes while they wait, kept alive by their attempts: a fair queue's place,
    /// or a writer's mark.
    bool waits_in_line() const noexcept { return fair() || marks_wait; }
};

// Every kind, each defined in its folder; a primitive names the kind it takes, never the folder that makes it.
const lock_kind& plain_lock_kind();      ///< primitives/mutex
const lock_kind& fair_lock_kind();       ///< primitives/fair
const lock_kind& reentrant_lock_kind();  ///< primitives/reentrant
const lock_kind& semaphore_kind();       ///< primitives/semaphore
const lock_kind& fair_semaphore_kind();  ///< primitives/semaphore
const lock_kind& read_lock_kind();       ///< primitives/rwlock: the shared side of a read-write lock
const lock_kind& write_lock_kind();      ///< primitives/rwlock: its exclusive side
const lock_kind& downgrade_kind();       ///< primitives/rwlock: a writer's hold turned into a reader's
const lock_kind& upgrade_kind();         ///< primitives/rwlock: a reader's hold turned into a writer's, tried once

}  // namespace redlock::detail
