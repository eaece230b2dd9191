// Who the server is and which version it runs, as its HELLO reply announces them (server_identity.hpp).
#pragma once

#include <redlock/resp/value.hpp>
#include <redlock/server_identity.hpp>

#include <cstdint>
#include <string_view>

namespace redlock::detail {

/// "7.0.15" -> 70015 (major * 10000 + minor * 100 + patch); 0 when the text is not such a version.
std::uint32_t parse_server_version(std::string_view text) noexcept;

/// The identity of HELLO's `server` and `version` fields: `redis` and `valkey` by name (any case), another name
/// (or none, with a version) is `other`; neither field is `unknown`.
server_identity make_server_identity(std::string_view server, std::string_view version) noexcept;

/// The `server` and `version` fields of a HELLO 3 reply (a map), read as make_server_identity does; unknown when
/// the reply is not a map.
server_identity server_identity_of_hello(const resp::value& hello) noexcept;

}  // namespace redlock::detail
