// The Redis version a server announces in its HELLO reply, as one comparable number.
#pragma once

#include <redlock/resp/value.hpp>

#include <cstdint>
#include <string_view>

namespace redlock::detail {

/// "7.0.15" -> 70015 (major * 10000 + minor * 100 + patch); 0 when the text is not such a version.
std::uint32_t parse_server_version(std::string_view text) noexcept;

/// The "version" field of a HELLO 3 reply (a map), parsed; 0 when there is none.
std::uint32_t server_version_of_hello(const resp::value& hello) noexcept;

/// Whether a connection to a server of `version` subscribes with SSUBSCRIBE (sharded pub/sub, Redis >= 7.0: what
/// the scripts' SPUBLISH reaches, within the shard on a Cluster) rather than SUBSCRIBE (6.x, or a version unknown).
inline bool sharded_pubsub(std::uint32_t version) noexcept
{
    return version >= 70000;
}

}  // namespace redlock::detail
