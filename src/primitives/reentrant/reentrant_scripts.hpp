// The Lua scripts of the reentrant lock and how their answers read.
//
// The lock key holds the owner's name (so inspection, status and plain locks of other languages see who holds
// it); `{key}:holds` is a hash with the key's TTL: a field per hold of the owner (one random id each, "1"), and
// the field "=<owner>" naming the owner the holds belong to, whose value is the fencing token committed to those
// holds ("0": none yet). Ids make every operation idempotent: a retried acquire adds the same id again, a clean-up
// removes only its own, so a late or repeated message can never miscount the holds.
#pragma once

#include "primitives/common/fencing.hpp"
#include "primitives/common/lease_protocol.hpp"
#include "primitives/common/lock_kind.hpp"

#include <redlock/error.hpp>
#include <redlock/request.hpp>
#include <redlock/response.hpp>

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

namespace redlock::detail::reentrant_scripts {

// The scripts and their contracts (KEYS, ARGV, replies) are the files of primitives/reentrant/: acquire.lua (a first
// hold or a re-entry), commit_fence.lua (phase 2 over N nodes, committed to the owner's holds too), extend.lua and
// release.lua.

request acquire_request(const std::string& key, const std::string& owner, const std::string& hold,
                        std::chrono::milliseconds ttl, std::chrono::milliseconds node_timeout, fence_step fence);
/// The lease's requests: `lease.keys` is the lock key alone, `lease.token` the hold's id, `lease.key_value` the
/// owner.
request commit_request(const lease_spec& lease, std::uint64_t fence, std::chrono::milliseconds node_timeout);
request extend_request(const lease_spec& lease, std::chrono::milliseconds ttl, std::chrono::milliseconds node_timeout);
request release_request(const lease_spec& lease, std::string_view release_id, std::chrono::milliseconds node_timeout);

/// An acquire's answer: 1 a first hold, 2 a re-entry (both granted), -(PTTL) or 0 refused; with fencing
/// {1 or 2, the counter, the token committed to the owner's holds}.
acquire_answer read_acquire(error_code ec, const response& resp);
/// An extension: yes when prolonged (1), no otherwise.
vote classify_extend(error_code ec, const response& resp);
/// A release: yes when it freed the key, the owner still holds it, or nothing of this hold was left; no when the key
/// is another owner's.
vote classify_release(error_code ec, const response& resp);

}  // namespace redlock::detail::reentrant_scripts
