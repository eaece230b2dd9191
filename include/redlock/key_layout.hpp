// Where a lock keeps its data on a node: a promise to clients in other languages that share our locks.
//
// The lock key is exactly the name the user gives and its value is the holder's token, as in redis-py's Lock,
// node-redlock and redsync. Every auxiliary key or channel lands in the lock key's Redis Cluster hash slot:
// `name:suffix` when the name already has a hash tag, else `{name}:suffix`.
#pragma once

#include <string>
#include <string_view>

namespace redlock {

/// True if `name` has a hash tag Redis Cluster would use: the first '{' followed later by '}' with at least
/// one character between them.
inline bool has_hash_tag(std::string_view name) noexcept
{
    const auto open = name.find('{');
    if (open == std::string_view::npos) return false;
    const auto close = name.find('}', open + 1);
    return close != std::string_view::npos && close > open + 1;
}

/// `name:suffix` when the name already has a hash tag, else `{name}:suffix`: either way the same slot as
/// `name` (a tagless name hashes whole, and `{name}` hashes exactly `name`). A tagless name that contains
/// '}' cannot share its slot with any other name; avoid such names on Redis Cluster.
inline std::string aux_name(std::string_view name, std::string_view suffix)
{
    std::string out;
    out.reserve(name.size() + suffix.size() + 3);
    if (has_hash_tag(name)) {
        out.append(name);
    } else {
        out.append("{").append(name).append("}");
    }
    out.append(":").append(suffix);
    return out;
}

/// What a read-write lock's key holds while readers hold it (a writer's key holds its token): a plain lock's SET NX
/// fails on it as on a holder's token. No reentrant owner may be named so.
inline constexpr std::string_view readers_marker = "(readers)";

/// The key of a lock's fence counter: `{key}:fence` (or `key:fence`). It never expires (doc/fencing.md).
inline std::string fence_counter_key(std::string_view lock_key)
{
    return aux_name(lock_key, "fence");
}

/// The channel a lock's release is published on: `{key}:released` (or `key:released`). The message is an id
/// unique to that release; a waiter retries the lock when one arrives.
inline std::string release_channel(std::string_view lock_key)
{
    return aux_name(lock_key, "released");
}

/// An election's leader hash: `{name}:leader` (or `name:leader`), fields `token`, `term`, `value` and `revision`,
/// written only where the election key (the name, a plain lock) holds that token. No TTL: it is read only beside the
/// key, and a hash whose token the key does not hold is stale (doc/election.md).
inline std::string leader_key(std::string_view name)
{
    return aux_name(name, "leader");
}

/// The channel an election's leader publishes on when it proclaims a value (its first, when elected):
/// `{name}:elected` (or `name:elected`). Observers listen there and on the release channel (a resignation).
inline std::string elected_channel(std::string_view name)
{
    return aux_name(name, "elected");
}

}  // namespace redlock
