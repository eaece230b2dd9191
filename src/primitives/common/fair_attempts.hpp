// Waiting in a fair (FIFO) queue, for every fair kind (the fair lock, the fair semaphore): a ticket per waiter,
// its place in the queue on every node, heartbeats, and leaving the queue on giving up. doc/locks.md, "Fair lock",
// says why the order holds over N nodes.
#pragma once

#include "primitives/common/acquire_loop.hpp"
#include "primitives/common/lock_call.hpp"

#include <memory>

namespace redlock::detail {

/// The answer to a fair kind's acquire, whose replies begin alike: granted {1, the fence counter or "0", the ticket
/// counter, ...}; refused {0, ms until the lock may change without a message (-1 or less: no hint), the ticket
/// counter, our ticket or 0, ...}. A kind appends what it needs after these (a semaphore: its limit).
acquire_answer read_queue_answer(error_code ec, const response& resp);

/// A fair call's waits: woken only by releases that name this waiter, and never pausing longer than a heartbeat.
void fair_plan(const lock_call& call, acquire_plan& plan);

/// The attempts of a fair call (the kind's fair_acquire, and the ticket they keep between them). A call that does
/// not wait (a try) takes no ticket: it would only join the queue to leave it.
attempt_fn fair_attempts(std::shared_ptr<const lock_call> call, bool waits);

/// A waiter in line (a fair kind's, or a writer that marks its wait) that gives up (deadline, cancellation, error)
/// leaves the queue, or takes its mark away, on every node at once (by the lease's release, which does it), so
/// nobody waits for its heartbeat to end.
void leave_queue(const lock_call& call);

}  // namespace redlock::detail
