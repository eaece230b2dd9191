// The Lua scripts of the semaphore and how their answers read.
//
// On each node, in the semaphore's hash slot: the semaphore's name is a ZSET of the permits held, one member per permit
// (its id), scored by the server time (ms) the permit expires at; `{name}:units` is a hash of each permit's id -> its
// units, plus `held` -> their sum (no id is `held`: ids are 32 hex digits); `{name}:limit` holds the limit. The set and
// the hash hold the same permits, so the hash has one field more than the set has members; the script that drops the
// last permit deletes both. A fair semaphore adds the fair lock's queue (`{name}:queue`, `{name}:alive`,
// `{name}:ticket`, fair_scripts.hpp). Every script reads the server's TIME, never a client's clock, and drops expired
// permits (subtracting their units) before it counts. Every script is O(1) in the units of a permit: only the permits
// that expire (each once), 64 of them to tell a refusal how long to wait, and a recount (when the keys disagree:
// written by hand, or by a client of the old layout, one member per unit) loop over permits. Every key has a TTL: the
// permits' set, their units and the limit live until the longest permit expires plus `key_margin`, so an abandoned
// semaphore leaves nothing behind.
#pragma once

#include "primitives/common/lease_protocol.hpp"
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

/// KEYS: the permits' set, their units, the limit. ARGV: permit id, units n, ttl, the caller's limit (a node without
/// one takes it), key margin. Grants when the units held by others plus n fit the node's limit (again, idempotently,
/// for an id it holds): {1, units held now, limit}. Refused: {0, ms until enough permits expire to fit n (-1: n is
/// above the limit), units held, limit}; a grant of an earlier attempt of ours is given back.
const script& acquire();
/// The fair semaphore's acquire. KEYS: the permits' set, their units, the limit, queue, alive, ticket counter. ARGV:
/// permit id, n, ttl, the caller's limit, key margin, waiter ttl, the waiter's ticket ("0": none yet), "1" to take a
/// ticket when refused without one, release channel. Joins and heartbeats as the fair lock's acquire does. Grants only
/// the first live waiter that holds no permit (or anyone, when nobody waits), and only when its n units fit: a request
/// of several permits at the head waits for them, and everyone behind it waits too. A grant that leaves room tells the
/// next waiter. Granted: {1, "0", ticket counter, limit}. Refused: {0, ms until the answer may change without a message
/// (enough permits expire, or the first waiter's heartbeat ends; -1: none), ticket counter, our ticket or 0, limit}.
const script& fair_acquire();
/// KEYS: the permits' set, their units, the limit. ARGV: permit id, ttl, key margin. Prolongs the permit to the
/// server's time plus ttl, never re-creating it: returns the ttl (what the permit now has left there), or 0 when the
/// permit is not held there (expired, released, or the node restarted empty).
const script& extend();
/// extend() for many permits (the watchdog's batches). KEYS: per permit its set, units and limit; ARGV: key margin,
/// then per permit its id and ttl. Returns extend()'s answer for each permit (-1 for one whose keys are of another
/// type).
const script& extend_many();
/// KEYS: the permits' set, their units. ARGV: permit id, release id, release channel. Removes the permit and publishes
/// "<release id>\n+<units>" (waking up to that many waiters). Returns the units removed: 0 when the permit had expired
/// or was not held.
const script& release();
/// The fair semaphore's release. KEYS: the permits' set, their units, queue, alive. ARGV: permit id, release id,
/// release channel, "1" to leave the queue too. Removes the permit; publishes "<release id>\n<first waiter>" when it
/// freed units or we left from the front. Returns the units removed.
const script& fair_release();
/// KEYS: the permits' set, their units, the limit, queue, alive. ARGV: new limit, release channel, change id, the least
/// TTL of the limit key (ms). Sets the limit, keeping it as long as the permits live; a changed limit wakes every
/// waiter ("+*") and the first fair waiter (larger: they may fit now; smaller: a request above it fails at once).
/// Returns the previous limit, 0 when there was none.
const script& set_limit();

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

/// Granted or refused, by either acquire (a well-formed array), or failed.
vote classify_acquire(error_code ec, const response& resp);
/// The limit a node reported in its answer to either acquire.
std::optional<std::int64_t> reported_limit(const response& resp);
/// From a refusal of either acquire: when to look again without a message.
std::optional<std::chrono::milliseconds> wait_hint(const response& resp);
/// extend(): yes when it answered a positive ttl, no for 0.
vote classify_extend(error_code ec, const response& resp);
std::optional<std::chrono::milliseconds> extended_for(const response& resp);
/// An extension found the permit gone there (0).
bool not_held(const response& resp);
/// release(): yes when it removed units, no when the permit was not held there (expired, or released).
vote classify_release(error_code ec, const response& resp);

}  // namespace redlock::detail::semaphore_scripts
