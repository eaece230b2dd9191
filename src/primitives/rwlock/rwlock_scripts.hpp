// The read-write lock's requests and how their answers read (doc/algorithms.md, "Read-write lock").
//
// On each node, in the name's hash slot: the name holds the writer's token (PX ttl: the plain lock's layout) or, while
// readers hold, the marker "(readers)", which lives as long as the last reader's entry; `{name}:readers` is a ZSET of
// the readers' tokens, each scored by the server time (ms) its lease ends there; `{name}:writers` a ZSET of the
// waiting writers' marks, scored by the server time each one's heartbeat ends. Every script reads the server's TIME,
// never a client's clock, and drops the readers and marks whose time passed before it counts them. A writer's
// extension, repair of a lost key's value and fencing commit are a token lease's (primitives/common/token_lease.hpp),
// as its key is the plain lock's; the acquires answer as acquire.lua does (token_lease::read_acquire).
#pragma once

#include "primitives/common/fencing.hpp"
#include "primitives/common/lease_protocol.hpp"
#include "quorum/tally.hpp"

#include <redlock/error.hpp>
#include <redlock/request.hpp>
#include <redlock/response.hpp>

#include <chrono>
#include <string>
#include <string_view>
#include <vector>

namespace redlock::detail::rwlock_scripts {

using ms = std::chrono::milliseconds;

/// read_acquire.lua: a reader joins; with the token of the name's writer, that writer becomes a reader (downgrade).
request read_acquire_request(const std::string& name, const std::string& token, ms ttl, ms node_timeout);
/// write_acquire.lua: `marks`: a writer that waits marks its wait with every attempt (not a try, an upgrade or a
/// repair); with a reader's own token, an upgrade.
request write_acquire_request(const std::string& name, const std::string& token, ms ttl, ms waiter_ttl, bool marks,
                              fence_step fence, ms node_timeout);

// release.lua, with what goes: as lease_protocol::release and lock_kind::clean_up want them.
/// A release of either side, and a waiter that gives up: the write key, the reader's entry and the mark go.
request release_request(const lease_spec& lease, std::string_view release_id, ms node_timeout);
/// A waiting writer's failed attempt: what it was granted goes, its mark stays.
request release_keeping_mark(const lease_spec& lease, std::string_view release_id, ms node_timeout);
/// A failed upgrade: the write key goes, the reader's entry (which the upgrade kept) stays.
request release_write_side(const lease_spec& lease, std::string_view release_id, ms node_timeout);

/// read_extend.lua, and read_extend_many.lua for the watchdog's batches.
request read_extend_request(const lease_spec& lease, ms ttl, ms node_timeout);
request read_extend_batch_request(const std::vector<batch_entry>& leases, ms node_timeout);
/// The repairs after an extension that reached a quorum: the side's acquire (a writer's without a mark).
request read_repair_request(const lease_spec& lease, ms ttl, ms node_timeout);
request write_repair_request(const lease_spec& lease, ms ttl, ms node_timeout);

/// A reader's extension: yes when prolonged (1), no when the entry is gone (0) or another writer holds the name (-1).
vote classify_read_extend(error_code ec, const response& resp);
/// From a refused reader's extension: the entry is gone there and no writer holds the name (0).
bool reader_gone(const response& resp);

}  // namespace redlock::detail::rwlock_scripts
