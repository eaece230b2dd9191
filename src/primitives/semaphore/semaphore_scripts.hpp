// The Lua scripts of the semaphore and how their answers read.
//
// On each node, in the semaphore's hash slot: the semaphore's name is a ZSET of the permits held, one member per permit
// (its id), scored by the server time (ms) the permit expires at; `{name}:units` is a hash of each permit's id -> its
// units, plus `held` -> their sum (permits.lib.lua); `{name}:limit` holds the limit. A fair semaphore adds the fair
// lock's queue (`{name}:queue`, `{name}:alive`,
// `{name}:ticket`, fair_scripts.hpp). Every script reads the server's TIME, never a client's clock, and drops expired
// permits (subtracting their units) before it counts. Every script is O(1) in the units of a permit: only the permits
// that expire (each once), 64 of them to tell a refusal how long to wait, and a recount (when the keys disagree:
// written by hand, or by a client of the old layout, one member per unit) loop over permits. Every key has a TTL: the
// permits' set, their units and the limit live until the longest permit expires plus `key_margin`, so an abandoned
// semaphore leaves nothing behind.
#pragma once

#include "primitives/common/lease_protocol.hpp"
#include "primitives/common/lock_kind.hpp"
#include "quorum/tally.hpp"

#include <redlock/request.hpp>
#include <redlock/response.hpp>
#include <redlock/script.hpp>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace redlock::detail::semaphore_scripts {

/// How long the keys outlive the longest permit.
inline constexpr std::chrono::milliseconds key_margin{1000};

// The scripts; each one's contract (KEYS, ARGV, replies) heads its file in primitives/semaphore/.
const script& acquire();       ///< acquire.lua
const script& fair_acquire();  ///< fair_acquire.lua
const script& extend();        ///< extend.lua
const script& extend_many();   ///< extend_many.lua (the watchdog's batches)
const script& release();       ///< release.lua: publishes "+<units>", waking up to that many waiters
const script& fair_release();  ///< fair_release.lua
const script& set_limit();     ///< set_limit.lua

std::string limit_key(const std::string& name);

request acquire_request(const std::string& name, const std::string& id, std::int64_t units,
                        std::chrono::milliseconds ttl, std::int64_t limit, std::chrono::milliseconds node_timeout);
request fair_acquire_request(const std::string& name, const std::string& id, std::int64_t units,
                             std::chrono::milliseconds ttl, std::int64_t limit, std::chrono::milliseconds waiter_ttl,
                             std::uint64_t ticket, bool take_ticket, std::chrono::milliseconds node_timeout);
/// As lease_protocol wants them: `permit.keys` is {name}, `permit.token` the permit's id.
request extend_request(const lease_spec& permit, std::chrono::milliseconds ttl, std::chrono::milliseconds node_timeout);
request extend_batch_request(const std::vector<batch_entry>& permits, std::chrono::milliseconds node_timeout);
request release_request(const lease_spec& permit, std::string_view release_id, std::chrono::milliseconds node_timeout);
/// A fair permit's release, and a fair waiter that gives up: removes the units and leaves the queue.
request fair_release_and_leave(const lease_spec& permit, std::string_view release_id,
                               std::chrono::milliseconds node_timeout);
/// A fair waiter's failed attempt: removes the units, keeps its place.
request fair_release_keeping_place(const lease_spec& permit, std::string_view release_id,
                                   std::chrono::milliseconds node_timeout);
request set_limit_request(const std::string& name, std::int64_t limit, std::string_view change_id,
                          std::chrono::milliseconds least_life, std::chrono::milliseconds node_timeout);
/// Plain reads (no script: a read-only ACL user may inspect): ZRANGE WITHSCORES of the permits, HGETALL of their units,
/// GET of the limit, TIME, ZCARD of the queue.
request inspect_request(const std::string& name, std::chrono::milliseconds node_timeout);

/// The semaphore's acquire answers: {1, units held, limit} granted; {0, ms until enough permits expire (-1: never),
/// units held, limit} refused. A node's stored limit rides on both.
acquire_answer read_acquire(error_code ec, const response& resp);
/// The fair semaphore's: a fair queue's answer (read_queue_answer) with the node's limit appended.
acquire_answer read_fair_acquire(error_code ec, const response& resp);
/// extend(): yes when it answered a positive ttl, no for 0.
vote classify_extend(error_code ec, const response& resp);
std::optional<std::chrono::milliseconds> extended_for(const response& resp);
/// An extension found the permit gone there (0).
bool not_held(const response& resp);
/// release(): yes when it removed units, no when the permit was not held there (expired, or released).
vote classify_release(error_code ec, const response& resp);

}  // namespace redlock::detail::semaphore_scripts
