// Which master owns each of the 16384 hash slots of a Redis Cluster, read from CLUSTER SHARDS (Redis >= 7) or
// CLUSTER SLOTS (6.x). Pure: no I/O; the node asks a member and hands the reply here.
#pragma once

#include "common/key_slot.hpp"

#include <redlock/resp/value.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace redlock::detail {

/// Where a master listens.
struct master_address {
    std::string host;
    std::uint16_t port = 0;

    /// `host:port` (an IPv6 host in brackets): the key of the node's connections, and what diagnostics show.
    std::string text() const;
    friend bool operator==(const master_address&, const master_address&) = default;
};

class slot_map {
public:
    /// The master of `slot`, or null when no master serves it (a slot left uncovered, or an empty map).
    const master_address* owner(std::uint16_t slot) const noexcept;
    /// Every master that owns a slot, each once, in the order the reply listed them.
    const std::vector<master_address>& masters() const noexcept { return masters_; }
    bool empty() const noexcept { return masters_.empty(); }
    /// Slots without a master.
    std::size_t uncovered_slots() const noexcept;

    /// `first..last` (inclusive) belong to `master`.
    void assign(std::uint16_t first, std::uint16_t last, const master_address& master);
    /// What a MOVED reply says, before the next full read: `slot` is `master`'s now.
    void assign(std::uint16_t slot, const master_address& master) { assign(slot, slot, master); }

    friend bool operator==(const slot_map&, const slot_map&) = default;

private:
    static constexpr std::uint16_t no_owner = 0xFFFF;
    void drop_unused_masters();

    std::vector<master_address> masters_;
    std::vector<std::uint16_t> owner_ = std::vector<std::uint16_t>(cluster_slots, no_owner);  // index into masters_
};

/// How the reply is read: the member asked (whose host stands in for a node whose address it does not know) and
/// whether the node connects with TLS (it then takes a node's tls-port when the reply gives one).
struct slot_map_source {
    std::string_view queried_host;
    bool tls = false;
};

/// Reads a CLUSTER SHARDS reply (RESP3 maps or RESP2 flat arrays; slot numbers as integers or strings, as some 7.0
/// releases sent them). Each shard's master is the node whose role is "master", preferring one whose health is
/// "online"; its address is its endpoint, else its ip. Returns nullopt and says why in `why` for a reply that is
/// not one.
std::optional<slot_map> read_cluster_shards(const resp::value& reply, const slot_map_source& source, std::string& why);

/// Reads a CLUSTER SLOTS reply (Redis 6.x): [first, last, [host, port, id...], replicas...] per range.
std::optional<slot_map> read_cluster_slots(const resp::value& reply, const slot_map_source& source, std::string& why);

}  // namespace redlock::detail
