// Which server a connection talks to (Redis, Valkey or another), and its version, as the server's HELLO reply
// announced them; and what that says about the commands it has. Every feature gate of the library asks one of
// its named predicates, never a bare version number.
//
// Why not a version alone: Valkey forked from Redis 7.2.4 and numbers its releases on its own (8.0, 8.1, 9.0)
// while Redis went on (7.4, 8.0, 8.2, 8.4), and the two add the same kind of command at different versions under
// different names. Valkey's INFO says `redis_version:7.2.4` whatever its release (a compatibility field); the HELLO
// of Valkey 8 says `server valkey`, `version 8.0.1`, which is what a connection records.
//
// Where a new gate goes: a predicate here, true from the first version of each server that has the command, then
// the command path beside the script it replaces. Two are expected and not written yet, because no server this
// project tests against (Redis 7.0 of Debian 12, Valkey 8.0.1 of bookworm-backports) runs them:
// - a compare-and-set acquire or extend with `SET key value IFEQ token`: Valkey >= 8.1, Redis >= 8.4;
// - a compare-and-delete release without a script: `DELIFEQ key token` on Valkey >= 9.0, `DELEX key IFEQ token`
//   on Redis >= 8.4 (two names for one command).
// With the identity recorded, each is a predicate and one request builder away.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace redlock {

/// The server software a connection talks to, from the `server` field of its HELLO reply.
enum class server_kind : std::uint8_t {
    unknown,  ///< no handshake yet (or a reply that named neither a server nor a version)
    redis,    ///< `server redis`: Redis, or a server that presents itself as Redis: Valkey 7.2.x says `redis 7.2.x`,
              ///< and Valkey 8 with `extended-redis-compatibility yes` says `redis 7.2.4` (what it has, and more)
    valkey,   ///< `server valkey`: Valkey 8.0 and later (unless extended-redis-compatibility is on)
    other,    ///< any other name, or none with a version: judged by its version as if it were Redis's
};

/// What a server announced in HELLO: its kind and version. A value: copy it. connection::server(), node::server(),
/// node_stats::server.
struct server_identity {
    server_kind kind = server_kind::unknown;
    /// HELLO's `version`, major * 10000 + minor * 100 + patch (Valkey 8.0.1 is 80001, Redis 7.0.15 is 70015);
    /// 0 when unknown or not such a number.
    std::uint32_t version = 0;

    /// Whether a handshake told anything (kind is not unknown).
    constexpr bool known() const noexcept { return kind != server_kind::unknown; }

    /// SSUBSCRIBE / SPUBLISH (sharded pub/sub): Redis >= 7.0, every Valkey. The library's scripts publish release
    /// messages with SPUBLISH where the server has it, and connections subscribe with SSUBSCRIBE.
    constexpr bool has_sharded_pubsub() const noexcept { return redis_7_or_valkey(); }
    /// `SET key value NX PX ttl GET` (the plain one-key acquire, without a script): Redis >= 7.0, every Valkey.
    constexpr bool has_set_nx_get() const noexcept { return redis_7_or_valkey(); }
    /// CLUSTER SHARDS (the slot map of a Redis Cluster; CLUSTER SLOTS before): Redis >= 7.0, every Valkey.
    constexpr bool has_cluster_shards() const noexcept { return redis_7_or_valkey(); }

    friend constexpr bool operator==(const server_identity&, const server_identity&) = default;

private:
    // Valkey's releases that say `server valkey` (8.0 on; 7.2.x said `redis`) have everything Redis 7.2.4 has.
    constexpr bool redis_7_or_valkey() const noexcept
    {
        return kind == server_kind::valkey ||
               ((kind == server_kind::redis || kind == server_kind::other) && version >= 70000);
    }
};

/// "redis", "valkey", "other" or "unknown".
std::string_view to_string(server_kind kind) noexcept;
/// "valkey 8.0.1", "redis 7.0.15"; "redis" alone when the version is unknown; "unknown" before a handshake.
std::string to_string(const server_identity& server);
/// The version as text: "8.0.1" for 80001; "" for 0.
std::string version_text(std::uint32_t version);

}  // namespace redlock
