// The requests of a lease whose keys hold its token (the plain and the fair lock's): take the keys, extend them
// (alone or many leases in a batch), commit a fencing token; and how a node's answers read. The scripts are
// primitives/common/*.lua.
#pragma once

#include "primitives/common/lease_protocol.hpp"
#include "primitives/common/lock_kind.hpp"
#include "quorum/tally.hpp"

#include <redlock/error.hpp>
#include <redlock/request.hpp>
#include <redlock/response.hpp>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace redlock::detail::token_lease {

/// acquire.lua: every key set to the token if none is another's. The plain lock's acquire without fencing, and
/// the repair of a lease on a node that lost its keys.
request acquire_request(const std::vector<std::string>& keys, const std::string& token, std::chrono::milliseconds ttl,
                        std::chrono::milliseconds node_timeout);
/// The repair of lease_protocol: acquire_request for the lease's keys and token.
request repair_request(const lease_spec& lease, std::chrono::milliseconds ttl, std::chrono::milliseconds node_timeout);
/// extend.lua, and extend_many.lua for a batch.
request extend_request(const lease_spec& lease, std::chrono::milliseconds ttl, std::chrono::milliseconds node_timeout);
request extend_batch_request(const std::vector<batch_entry>& leases, std::chrono::milliseconds node_timeout);
/// commit_fence.lua: phase 2 of fencing, where `lease.keys` still hold `lease.key_value`.
request commit_request(const lease_spec& lease, std::uint64_t fence, std::chrono::milliseconds node_timeout);

/// The answer of acquire.lua, and of every acquire script that answers alike (the plain lock's fenced acquires, the
/// read-write lock's): 1 granted, {1, counter} granted with fencing, -(the holder's PTTL) or 0 refused.
acquire_answer read_acquire(error_code ec, const response& resp);

/// A fencing commit (this one, and the reentrant lock's, which answers alike): yes when committed (1), no when the
/// lock is not ours there (0) or a counter is at the token or above (-1).
vote classify_commit(error_code ec, const response& resp);
/// An extension: yes when prolonged (1), no otherwise (0 lost there, -1 another owner's).
vote classify_extend(error_code ec, const response& resp);
/// From a refused extension: the node lost our keys and no other owner holds them (0).
bool lost_key(const response& resp);
/// A release (the plain lock's, the fair lock's): yes when it deleted our keys (> 0) or nothing of ours was left
/// (0), no when another token holds one (< 0).
vote classify_release(error_code ec, const response& resp);

}  // namespace redlock::detail::token_lease
