// `redlock status` on a semaphore's key: what each node stores (limit, permits, waiters), the permits held on a
// quorum, and how many node failures the semaphore tolerates.
#pragma once

#include "cli/common/output.hpp"

#include <redlock/lock_inspection.hpp>
#include <redlock/semaphore_inspection.hpp>

namespace redlock::cli {

// Whether a lock inspection leaves room for a semaphore: a node found a key of another type (WRONGTYPE: a
// semaphore's permits are a sorted set), or the key is free everywhere (an idle semaphore keeps only its limit).
bool may_be_semaphore(const lock_inspection& lock);

// Whether `seen` is a semaphore: a node stores its limit or permits, or the lock's WRONGTYPE is a sorted set.
bool is_semaphore(const lock_inspection& lock, const semaphore_inspection& seen);

// Prints the report on stdout; returns the exit code (0, or 69 when fewer than the permit quorum answered).
int print_semaphore_status(const semaphore_inspection& seen, const reporter& report);

}  // namespace redlock::cli
