// The Lua scripts of the reentrant lock and how their answers read.
//
// The lock key holds the owner's name (so inspection, status and plain locks of other languages see who holds
// it); `{key}:holds` is a hash with the key's TTL: a field per hold of the owner (one random id each, "1"), and
// the field "=<owner>" naming the owner the holds belong to, whose value is the fencing token committed to those
// holds ("0": none yet). Ids make every operation idempotent: a retried acquire adds the same id again, a clean-up
// removes only its own, so a late or repeated message can never miscount the holds.
#pragma once

#include "primitives/common/lease_protocol.hpp"
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

/// KEYS: the lock key, its holds[, its fence counter]; ARGV: owner, ttl in ms, hold id, fence step ("none",
/// "read" or "increment"). Refused when another owner holds the key: -(its PTTL), or 0 without TTL. Otherwise
/// adds the hold (the key's TTL becomes at least ttl) and returns 1 for a first hold, 2 for a re-entry; with a
/// counter, {1 or 2, the counter, the token committed to the owner's holds or "0"}. A first hold starts the holds
/// afresh, so it never carries a token of an earlier owner's. On one node ("increment") a hold without a committed
/// token takes one (the counter + 1) and commits it to the holds: the third element is then its token.
const script& acquire();
/// Fencing, phase 2 over N nodes. KEYS: the lock key, its fence counter, its holds; ARGV: owner, token T. Sets the
/// counter to T and commits T to the owner's holds, if the owner still holds the key and the counter is below T.
/// Returns 1; 0 if the key is not the owner's; -1 if the counter is at T or above.
const script& commit_fence();
/// KEYS: the lock key, its holds; ARGV: hold id, ttl, owner. Prolongs both to at least ttl if the owner holds the
/// key and the hold is one of its. Returns 1; 0 when the key or the hold is gone; -1 when another owner has it.
const script& extend();
/// KEYS: the lock key, its holds; ARGV: hold id, release id, release channel, owner. Removes the hold; frees the
/// key (and publishes the release) when it was the owner's last. Returns 1 freed, 2 still held by the owner's
/// other holds, 0 nothing of this hold left (the key gone, or the hold released already: a retried release),
/// -1 the key is another owner's.
const script& release();

request acquire_request(const std::string& key, const std::string& owner, const std::string& hold,
                        std::chrono::milliseconds ttl, std::chrono::milliseconds node_timeout,
                        lock_scripts::fence_step fence);
/// The lease's requests: `lease.keys` is the lock key alone, `lease.token` the hold's id, `lease.key_value` the
/// owner.
request commit_request(const lease_spec& lease, std::uint64_t fence, std::chrono::milliseconds node_timeout);
request extend_request(const lease_spec& lease, std::chrono::milliseconds ttl, std::chrono::milliseconds node_timeout);
request release_request(const lease_spec& lease, std::string_view release_id, std::chrono::milliseconds node_timeout);

vote classify_acquire(error_code ec, const response& resp);
/// From a fenced grant: the node's counter.
std::optional<std::uint64_t> granted_fence(const response& resp);
/// From a fenced grant: the token committed to the owner's holds on that node (0: none).
std::optional<std::uint64_t> committed_fence(const response& resp);
vote classify_release(error_code ec, const response& resp);

}  // namespace redlock::detail::reentrant_scripts
