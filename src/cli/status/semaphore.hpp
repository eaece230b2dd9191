// `redlock status` on a semaphore's key: what each node stores (limit, permits, waiters), the permits held on a
// quorum, and how many node failures the semaphore tolerates.
#pragma once

#include "cli/common/output.hpp"

#include <redlock/lock_inspection.hpp>
#include <redlock/semaphore_inspection.hpp>
#include <redlock/server_identity.hpp>

#include <vector>

namespace redlock::cli {

// Whether a lock inspection leaves room for a semaphore: a node found a key of another type (WRONGTYPE: a
// semaphore's permits are a sorted set), or the key is free everywhere (an idle semaphore keeps only its limit).
bool may_be_semaphore(const lock_inspection& lock);

// Whether `seen` is a semaphore: a node stores its limit or permits, or the lock's WRONGTYPE is a sorted set.
bool is_semaphore(const lock_inspection& lock, const semaphore_inspection& seen);

// Prints the report on stdout, with each reachable node's server (`servers`, in the order of the nodes; missing
// ones are not shown); returns the exit code (0, or 69 when fewer than the permit quorum answered).
int print_semaphore_status(const semaphore_inspection& seen, const std::vector<server_identity>& servers,
                           const reporter& report);

// "server valkey 8.0.1  " for a known server, "" otherwise: what a reachable node's status line shows after
// "reachable  ".
std::string server_column(const std::vector<server_identity>& servers, std::size_t node);

}  // namespace redlock::cli
