// The first exchange of every connection attempt, as one pipelined request sent in one write and answered in one
// round trip: HELLO 3 (with AUTH and SETNAME when configured), SELECT when the URL names a db, and one SUBSCRIBE
// per channel to restore (one each, so that a refusal drops that channel alone). And what its replies mean. Pure:
// connect.cpp sends it and reads the replies; unit tests feed it replies.
#pragma once

#include <redlock/error.hpp>
#include <redlock/node_config.hpp>
#include <redlock/request.hpp>
#include <redlock/response.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace redlock::detail {

struct handshake_request {
    request commands;
    bool selects_db = false;
    std::vector<std::string> channels;  ///< the SUBSCRIBEs after HELLO (and SELECT), in order
};

handshake_request make_handshake(const node_config& config, std::vector<std::string> channels);

/// What the handshake's replies say.
struct handshake_outcome {
    /// Clear: connected. error::auth_failed (WRONGPASS, NOAUTH, NOPERM) and error::unsupported_server (no HELLO 3)
    /// from HELLO; error::server_error from HELLO or SELECT otherwise; error::protocol_error when the replies do
    /// not answer the request. The restore never fails the handshake: refused channels are dropped.
    error_code ec;
    std::string server_message;         ///< the error reply that failed it
    std::string client_message;         ///< what did not answer the request (protocol_error)
    std::uint32_t server_version = 0;   ///< announced by HELLO (70015 for 7.0.15); 0 if it did not say
    std::vector<std::string> restored;  ///< channels the server subscribed again
    std::vector<std::string> refused;   ///< channels it refused: no longer kept
};

/// Reads `replies`, one per reply `sent` expects, in order. Each SUBSCRIBE's reply is its own: a confirmation
/// of that channel, or an error. Restored and refused channels are reported only when HELLO and SELECT succeeded.
handshake_outcome read_handshake(const handshake_request& sent, const response& replies);

}  // namespace redlock::detail
