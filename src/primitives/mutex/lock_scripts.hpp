// The Lua scripts of the mutex and how their answers count as votes.
#pragma once

#include "primitives/common/lease_protocol.hpp"
#include "quorum/tally.hpp"

#include <redlock/error.hpp>
#include <redlock/lock_options.hpp>
#include <redlock/request.hpp>
#include <redlock/response.hpp>
#include <redlock/script.hpp>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace redlock::detail::lock_scripts {

// The scripts; each one's contract (KEYS, ARGV, replies) heads its file.
const script& acquire();                     ///< primitives/common/acquire.lua
const script& acquire_reading_fence();       ///< primitives/mutex/acquire_reading_fence.lua (phase 1 over N nodes)
const script& acquire_incrementing_fence();  ///< primitives/mutex/acquire_incrementing_fence.lua (one node)
const script& commit_fence();                ///< primitives/common/commit_fence.lua (phase 2 over N nodes)
const script& extend();                      ///< primitives/common/extend.lua
const script& extend_many();                 ///< primitives/common/extend_many.lua (the watchdog's batches)
const script& release();                     ///< primitives/mutex/release.lua

/// What an acquire does with the fence counters.
enum class fence_step {
    none,       ///< plain lock, and every extension
    read,       ///< phase 1 over N nodes
    increment,  ///< one node: the token in the acquire's own round trip
};

/// How a script of another lock kind is told the fence step (an ARGV): "none", "read" or "increment".
const char* fence_step_name(fence_step fence) noexcept;

/// The requests themselves, each with the per-node deadline.
request acquire_request(const std::vector<std::string>& keys, const std::string& token, std::chrono::milliseconds ttl,
                        std::chrono::milliseconds node_timeout, fence_step fence = fence_step::none);
/// Phase 2 of fencing: commits `fence` where `lease.keys` still hold `lease.key_value`.
request commit_request(const lease_spec& lease, std::uint64_t fence, std::chrono::milliseconds node_timeout);
/// The lease's requests (lease_protocol): `lease.keys` and `lease.token`.
request extend_request(const lease_spec& lease, std::chrono::milliseconds ttl, std::chrono::milliseconds node_timeout);
/// One request for a batch of leases (extend_many()).
request extend_batch_request(const std::vector<batch_entry>& leases, std::chrono::milliseconds node_timeout);
/// `release_id`: unique to this release (waiters de-duplicate the N nodes' messages by it).
request release_request(const lease_spec& lease, std::string_view release_id, std::chrono::milliseconds node_timeout);

/// The acquire of one key without fencing on Redis >= 7.0, at a fraction of a script's server time:
/// `SET key token NX PX ttl GET` then `PTTL key`, pipelined. The SET answers nil when it granted (nobody held
/// the key) and the holder's token when refused; the PTTL then says how long that holder's key lives.
request set_acquire_request(const std::string& key, const std::string& token, std::chrono::milliseconds ttl,
                            std::chrono::milliseconds node_timeout);
/// Granted (the SET answered nil), refused (it answered a token) or failed.
vote classify_set_acquire(error_code ec, const response& resp);
/// A set acquire answered with an error other than WRONGTYPE (a server older than 7.0, an ACL user without
/// PTTL, a proxy that rejects the syntax), or with OK (a proxy that dropped GET): the script acquire is the one
/// to trust there.
bool set_acquire_rejected(const response& resp);

/// Granted (1, or a fenced grant whose counter parses), refused (-PTTL or 0) or failed.
vote classify_acquire(error_code ec, const response& resp);
/// The counter a fenced grant returned.
std::optional<std::uint64_t> granted_fence(const response& resp);
vote classify_commit(error_code ec, const response& resp);
vote classify_extend(error_code ec, const response& resp);
/// From a refused extension: the node lost our keys, and no other owner holds them (extend() returned 0).
bool lost_key(const response& resp);
vote classify_release(error_code ec, const response& resp);

/// From a refused acquire, script or set: how long the holder's key lives on that node.
std::optional<std::chrono::milliseconds> holder_ttl(const response& resp);

}  // namespace redlock::detail::lock_scripts
