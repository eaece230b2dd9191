// The fair (FIFO) lock's requests: its acquire (primitives/fair/acquire.lua) and its release
// (primitives/fair/release.lua), both keeping the queue (primitives/common/fair_queue.lib.lua).
//
// Beside the lock key (whose value is the holder's token, as for the plain lock), in the key's hash slot:
// `{key}:queue`, a ZSET of waiters scored by ticket (equal tickets order by token, the same on every node);
// `{key}:alive`, a ZSET of the same waiters scored by the server time (ms) their heartbeat ends; and
// `{key}:ticket`, the highest ticket seen. All three expire two waiter TTLs after their last write: an idle
// lock leaves nothing behind. Time is always the server's (TIME), never a client's clock.
#pragma once

#include "primitives/common/fencing.hpp"
#include "primitives/common/lease_protocol.hpp"

#include <redlock/request.hpp>

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

namespace redlock::detail::fair_scripts {

request acquire_request(const std::string& key, const std::string& token, std::chrono::milliseconds ttl,
                        std::chrono::milliseconds waiter_ttl, std::uint64_t ticket, bool take_ticket, fence_step fence,
                        std::chrono::milliseconds node_timeout);
/// A failed attempt's clean-up: frees the key where ours, keeps our place in the queue.
request release_keeping_place(const lease_spec& lease, std::string_view release_id,
                              std::chrono::milliseconds node_timeout);
/// The lease's release, and a waiter that gives up: frees the key where ours and leaves the queue.
request release_and_leave(const lease_spec& lease, std::string_view release_id, std::chrono::milliseconds node_timeout);

}  // namespace redlock::detail::fair_scripts
