// A Redis Cluster's refusal to run a command where it was sent: MOVED and ASK (another master serves the slot),
// TRYAGAIN (a multi-key command during a slot's migration) and CLUSTERDOWN (the cluster cannot serve the slot
// now). Pure: read from an error reply's text.
#pragma once

#include "cluster/slot_map.hpp"

#include <redlock/response.hpp>

#include <cstdint>
#include <optional>
#include <string_view>

namespace redlock::detail {

struct cluster_refusal {
    enum class kind {
        moved,         ///< the slot is `target`'s: update the map, send it there
        ask,           ///< the slot is migrating to `target`: send ASKING + the command there, once
        try_again,     ///< try the same master again shortly
        cluster_down,  ///< the cluster is failing over or lost the slot's master: try again shortly
    };
    kind what = kind::moved;
    std::uint16_t slot = 0;  ///< moved and ask only
    master_address target;   ///< moved and ask only
};

/// Reads `MOVED <slot> <host>:<port>`, `ASK <slot> <host>:<port>`, `TRYAGAIN ...` and `CLUSTERDOWN ...`. The host
/// may be an IPv4 address, an IPv6 address (bare, its last colon before the port, or in brackets) or a name; an
/// empty host means the server that answered, `answered_host`. Any other text, or a redirect that does not parse,
/// is no refusal (nullopt): the caller sees the server's error as it is.
std::optional<cluster_refusal> read_refusal(std::string_view error_text, std::string_view answered_host);

/// The refusal of a request as a whole: its first reply, when that is one. A refused first command did not run,
/// and the commands of one request share a slot, so the rest was refused too or ran nothing that depends on it
/// (a request whose first command ran and a later one was refused gets its replies as they are).
std::optional<cluster_refusal> read_refusal(const response& replies, std::string_view answered_host);

}  // namespace redlock::detail
