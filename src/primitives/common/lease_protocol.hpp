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

/// One lease in a batched extension.
struct batch_entry {
    const std::vector<std::string>* keys;
    const std::string* token;
    std::chrono::milliseconds ttl;
};

struct lease_protocol {
    std::string routing_key;  ///< the hash slot of everything the lease touches
    std::size_t quorum = 0;   ///< yes votes an extension or a release needs
    // The requests, built from the lease's own keys, token and timing when first needed (most leases are
    // released without ever being extended), each once per lease however often it is sent.
    using make_request_fn = request (*)(const std::vector<std::string>& keys, const std::string& token,
                                        std::chrono::milliseconds ttl, std::chrono::milliseconds node_timeout);
    make_request_fn extend = nullptr;  ///< prolongs the lease where it still holds our token, and nothing else
    classify_fn extended;              ///< yes: prolonged; no: not ours there
    /// Ends the lease where it holds our token; `release_id` is unique to this release.
    request (*release)(const std::vector<std::string>& keys, const std::string& token, std::string_view release_id,
                       std::chrono::milliseconds node_timeout) = nullptr;
    classify_fn released;  ///< yes: ended, or nothing of ours left; no: another owner holds it
    /// Optional repair, after an extension that reached a quorum: sent only to the nodes whose answer
    /// `needs_repair` (they lost our keys and nobody else holds them: a restart without persistence, a key
    /// that lapsed while the node was slow). While a quorum holds the lease nobody else can hold it, so taking
    /// the keys back there is safe, and it keeps a long lease from dying of one node restart after another.
    request (*repair)(const lease_protocol& self, const std::vector<std::string>& keys, const std::string& token,
                      std::chrono::milliseconds ttl, std::chrono::milliseconds node_timeout) = nullptr;
    bool (*needs_repair)(const response& reply) = nullptr;
    /// A semaphore permit: its units and the limit its acquire named, which the repair acquires with again.
    std::int64_t units = 1;
    std::int64_t limit = 0;
    /// Optional: one request that extends many leases of this protocol; each node answers an array whose
    /// element j reads, by `extended`, as entries[j]'s own extension would. The watchdog batches the leases
    /// due together with it; without it (and for async_extend) each lease extends alone.
    using batch_extend_fn = request (*)(const std::vector<batch_entry>& entries,
                                        std::chrono::milliseconds node_timeout);
    batch_extend_fn extend_batch = nullptr;
    /// Optional: how long a node's answer to an extension says the lease now lives there, by the node's own
    /// clock (a semaphore permit's expiry is the server's time).
    std::optional<std::chrono::milliseconds> (*remaining)(const response& extended) = nullptr;
};

/// How long a lease lives and how the watchdog keeps it.
struct lease_timing {
    std::chrono::milliseconds ttl{0};
    double drift_factor = 0.01;
    bool watchdog = false;
    std::chrono::milliseconds extend_interval{0};  ///< 0: ttl / 3
    std::chrono::milliseconds max_hold{0};         ///< 0: no limit
    std::chrono::milliseconds node_timeout{0};     ///< of each extension on each node
};

}  // namespace redlock::detail
