// The Lua scripts of the fair (FIFO) lock and how their answers read.
//
// Beside the lock key (whose value is the holder's token, as for the plain lock), in the key's hash slot:
// `{key}:queue`, a ZSET of waiters scored by ticket (equal tickets order by token, the same on every node);
// `{key}:alive`, a ZSET of the same waiters scored by the server time (ms) their heartbeat ends; and
// `{key}:ticket`, the highest ticket seen. All three expire two waiter TTLs after their last write: an idle
// lock leaves nothing behind. Time is always the server's (TIME), never a client's clock.
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

namespace redlock::detail::fair_scripts {

/// The queue's Lua functions (server_now, drop_dead, head, keep, join), for scripts of other fair primitives
/// that keep the same queue.
std::string_view queue_lua() noexcept;

/// KEYS: lock key, queue, alive, ticket counter[, fence counter]. ARGV: token, ttl, waiter ttl, the waiter's
/// ticket ("0": none yet), "1" to take a ticket when refused without one (one node: the counter is the order),
/// fence step, release channel. Drops waiters whose heartbeat ended (or who have none); a waiter with a ticket
/// joins the queue with it (once: the same ticket on every node), raises the counter to it and heartbeats.
/// Grants when the key is free (or ours) and the queue is empty or starts with us: {1, fence counter or "0",
/// ticket counter}. Refused: {0, ms until the lock may change without a release message (the holder's PTTL, or
/// when the first waiter's heartbeat ends), the counter, our ticket or 0}; a key of ours it gives back to the
/// first waiter, telling it as a clean-up does.
const script& acquire();
/// KEYS: lock key, queue, alive; ARGV: token, release id, release channel, "1" to leave the queue too. Deletes
/// the key if ours; publishes "<release id>\n<first waiter's token>" when it freed the key or we left from the
/// front. Returns as the mutex's release (1 or 0; -1 another token holds the key).
const script& release();

request acquire_request(const std::string& key, const std::string& token, std::chrono::milliseconds ttl,
                        std::chrono::milliseconds waiter_ttl, std::uint64_t ticket, bool take_ticket,
                        lock_scripts::fence_step fence, std::chrono::milliseconds node_timeout);
/// A failed attempt's clean-up: frees the key where ours, keeps our place in the queue.
request release_keeping_place(const lease_spec& lease, std::string_view release_id,
                              std::chrono::milliseconds node_timeout);
/// The lease's release, and a waiter that gives up: frees the key where ours and leaves the queue.
request release_and_leave(const lease_spec& lease, std::string_view release_id, std::chrono::milliseconds node_timeout);

vote classify_acquire(error_code ec, const response& resp);
std::optional<std::uint64_t> granted_fence(const response& resp);
/// From a refusal: when to look again without a message.
std::optional<std::chrono::milliseconds> wait_hint(const response& resp);
/// From a grant or a refusal: the node's ticket counter. From a refusal: the ticket it gave us (one node), or 0.
std::optional<std::uint64_t> counter(const response& resp);
std::optional<std::uint64_t> ticket(const response& resp);

}  // namespace redlock::detail::fair_scripts
