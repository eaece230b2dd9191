// What the lease machinery needs to know of a primitive: how to extend and release its lease, and how to read
// a node's answer to each. The mutex is one protocol; a semaphore permit is another.
#pragma once

#include "quorum/node_set.hpp"

#include <redlock/request.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace redlock::detail {

/// What one lease is on the nodes: written by its acquire, read by its extension, release and repair.
struct lease_spec {
    std::vector<std::string> keys;  ///< the lock keys (a semaphore: its name); the first routes every request
    std::string token;              ///< the lease's own id (a reentrant lock: the hold's)
    std::string key_value;          ///< what the keys hold while the lease is ours: the token, or the owner's name
    std::int64_t units = 1;         ///< a semaphore permit: its units
    std::int64_t limit = 0;         ///< a semaphore permit: the limit its acquire named
    const std::string& routing_key() const noexcept { return keys.front(); }
};

/// One lease in a batched extension.
struct batch_entry {
    const lease_spec* lease;
    std::chrono::milliseconds ttl;
};

/// How a kind of lease is extended, released and repaired, and how a node's answer to each reads: one constant
/// per primitive (the mutex's, the reentrant lock's, a permit's...); what differs per lease is its lease_spec.
struct lease_protocol {
    using ms = std::chrono::milliseconds;
    // The requests are built from the lease's spec and timing when first needed (most leases are released without
    // ever being extended), each once per lease however often it is sent.
    request (*extend)(const lease_spec& lease, ms ttl, ms node_timeout) = nullptr;  ///< where it is still ours only
    classify_fn extended = nullptr;  ///< yes: prolonged; no: not ours there
    /// Ends the lease where it is ours; `release_id` is unique to this release.
    request (*release)(const lease_spec& lease, std::string_view release_id, ms node_timeout) = nullptr;
    classify_fn released = nullptr;  ///< yes: ended, or nothing of ours left; no: another owner holds it
    /// Optional repair, after an extension that reached a quorum: sent only to the nodes whose answer
    /// `needs_repair` (they lost our keys and nobody else holds them: a restart without persistence, a key
    /// that lapsed while the node was slow). While a quorum holds the lease nobody else can hold it, so taking
    /// the keys back there is safe, and it keeps a long lease from dying of one node restart after another.
    request (*repair)(const lease_spec& lease, ms ttl, ms node_timeout) = nullptr;
    bool (*needs_repair)(const response& reply) = nullptr;
    /// Optional: one request that extends many leases of this protocol; each node answers an array whose
    /// element j reads, by `extended`, as entries[j]'s own extension would. The watchdog batches the leases
    /// due together with it; without it (and for async_extend) each lease extends alone.
    using batch_extend_fn = request (*)(const std::vector<batch_entry>& entries, ms node_timeout);
    batch_extend_fn extend_batch = nullptr;
    /// Optional: how long a node's answer to an extension says the lease now lives there, by the node's own
    /// clock (a semaphore permit's expiry is the server's time).
    std::optional<ms> (*remaining)(const response& extended) = nullptr;
    /// The lease's keys are strings holding lease_spec::key_value while it is ours, and no other holder writes them:
    /// client tracking watches them (key_watch), so that their loss on a node is known at once. False for keys
    /// every holder writes (a semaphore's permits, a read-write lock's readers), whose news would come at each
    /// other holder's step.
    bool tracked = false;
};

/// How long a lease lives and how the watchdog keeps it.
struct lease_timing {
    std::chrono::milliseconds ttl{0};
    double drift_factor = 0.01;
    bool watchdog = false;
    std::chrono::milliseconds extend_interval{0};  ///< 0: ttl / 3
    std::chrono::milliseconds max_hold{0};         ///< 0: no limit
    std::chrono::milliseconds node_timeout{0};     ///< of each extension on each node
    replica_acks acks;  ///< on: an extension counts on a node only once its replicas acknowledged it
};

}  // namespace redlock::detail
