// The Lua scripts of the reentrant lock and how their answers read.
//
// The lock key holds the owner's name (so inspection, status and plain locks of other languages see who holds
// it); `{key}:holds` is the set of the owner's holds, one random id each, with the key's TTL. Ids make every
// operation idempotent: a retried acquire adds the same id again, a clean-up removes only its own, so a late or
// repeated message can never miscount the holds.
#pragma once

#include "primitives/mutex/lock_scripts.hpp"

#include <redlock/request.hpp>
#include <redlock/response.hpp>
#include <redlock/script.hpp>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace redlock::detail::reentrant_scripts {

/// KEYS: the lock key, its holds set[, its fence counter]; ARGV: owner, ttl in ms, hold id, fence step
/// ("none", "read" or "increment"). Refused when another owner holds the key: -(its PTTL), or 0 without TTL.
/// Otherwise adds the hold (the key's TTL becomes at least ttl) and returns 1 for a first hold, 2 for a
/// re-entry; with a counter, {1 or 2, the counter}: a first hold reads it (or increments it on one node), a
/// re-entry reads the one the owner's first hold was issued.
const script& acquire();
/// KEYS: the lock key, its holds set; ARGV: hold id, ttl. Prolongs both to at least ttl if the hold is still
/// one of the owner's. Returns 1; 0 when the key is gone; -1 when another owner (or none of this hold) has it.
const script& extend();
/// KEYS: the lock key, its holds set; ARGV: hold id, release id, release channel. Removes the hold; frees the
/// key (and publishes the release) when it was the last. Returns 1 freed, 2 still held by the owner's other
/// holds, 0 nothing of this hold left, -1 the key is another owner's.
const script& release();

request acquire_request(const std::string& key, const std::string& owner, const std::string& hold,
                        std::chrono::milliseconds ttl, std::chrono::milliseconds node_timeout,
                        lock_scripts::fence_step fence);
/// The lease's requests: `keys` is the lock key alone and `hold` the lease's token.
request extend_request(const std::vector<std::string>& keys, const std::string& hold, std::chrono::milliseconds ttl,
                       std::chrono::milliseconds node_timeout);
request release_request(const std::vector<std::string>& keys, const std::string& hold, std::string_view release_id,
                        std::chrono::milliseconds node_timeout);

vote classify_acquire(error_code ec, const response& resp);
std::optional<std::uint64_t> granted_fence(const response& resp);
bool reentered(const response& resp);
vote classify_release(error_code ec, const response& resp);

}  // namespace redlock::detail::reentrant_scripts
