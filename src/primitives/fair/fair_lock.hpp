// The fair (FIFO) lock's attempts: a ticket per waiter, a queue per lock on every node, heartbeats, and
// leaving the queue on giving up. doc/locks.md, "Fair lock", says why the order holds over N nodes.
#pragma once

#include "primitives/common/acquire_loop.hpp"
#include "primitives/mutex/lock_call.hpp"

#include <memory>

namespace redlock::detail {

/// Turns a lock call and its plan into a fair one: the fair lock's scripts (a fair semaphore replaces the
/// acquire and the releases with its own, which keep the same queue), wake-ups only by releases that name this
/// waiter, and a pause no longer than a heartbeat.
void make_fair(lock_call& call, acquire_plan& plan);

/// The attempts of a fair lock call (they keep the waiter's ticket between them). A call that does not wait
/// (a try-lock) takes no ticket: it would only join the queue to leave it.
attempt_fn fair_attempts(std::shared_ptr<const lock_call> call, bool waits);

/// A fair waiter that gives up (deadline, cancellation, error) leaves the queue on every node at once (by the
/// call's release, which leaves it), so nobody waits for its heartbeat to end.
void leave_queue(const lock_call& call);

}  // namespace redlock::detail
