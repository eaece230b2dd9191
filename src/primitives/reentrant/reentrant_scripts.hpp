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

// The scripts; each one's contract (KEYS, ARGV, replies) heads its file in primitives/reentrant/.
const script& acquire();  ///< acquire.lua: a first hold (1) or a re-entry (2); with fencing {kind, counter, committed}
const script& commit_fence();  ///< commit_fence.lua: phase 2 over N nodes, committed to the owner's holds too
const script& extend();        ///< extend.lua
const script& release();       ///< release.lua: 1 freed, 2 still held, 0 nothing of this hold left, -1 another's

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
