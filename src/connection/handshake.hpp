// The first exchange of every connection attempt, as one pipelined request sent in one write and answered in one
// round trip: HELLO 3 (with AUTH and SETNAME when configured), SELECT when the URL names a db, CLIENT TRACKING on
// NOLOOP when node_config::track_keys, and one subscribe
// per channel to restore (one each, so that a refusal drops that channel alone). And what its replies mean. Pure:
// connect.cpp sends it and reads the replies; unit tests feed it replies.
//
// The restores subscribe as the server calls for (SSUBSCRIBE where server_identity::has_sharded_pubsub, SUBSCRIBE
// elsewhere), but the server's identity arrives with HELLO's reply, after they were sent: they take the last
// session's, and when the server changed across the reconnect (an upgrade, a downgrade, another server) a second
// exchange, the resubscription, undoes what they subscribed and subscribes again with the right command.
#pragma once

#include <redlock/error.hpp>
#include <redlock/node_config.hpp>
#include <redlock/request.hpp>
#include <redlock/response.hpp>
#include <redlock/server_identity.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace redlock::detail {

struct handshake_request {
    request commands;
    bool says_hello = true;  ///< HELLO comes first (false: a resubscription)
    bool selects_db = false;
    bool tracks_keys = false;  ///< CLIENT TRACKING follows HELLO (and SELECT)
    /// A resubscription's first command unsubscribes these (SUNSUBSCRIBE when `undo_sharded`, else UNSUBSCRIBE).
    std::vector<std::string> undone;
    bool undo_sharded = false;
    std::vector<std::string> channels;  ///< the subscribes after HELLO (and SELECT), one channel each, in order
    bool sharded = false;               ///< they are SSUBSCRIBEs (else SUBSCRIBEs)
};

/// The handshake: the restores of `channels` with SSUBSCRIBE when `sharded` (the last session's server had it),
/// else SUBSCRIBE.
handshake_request make_handshake(const node_config& config, std::vector<std::string> channels, bool sharded = false);

/// The second exchange after a handshake whose restores used the other command than the server calls
/// for: unsubscribes `undo` (the channels they subscribed, with the kin of their command, `undo_sharded`), then
/// subscribes each of `channels` with the command of the server (`sharded`).
handshake_request make_resubscribe(std::vector<std::string> undo, bool undo_sharded, std::vector<std::string> channels,
                                   bool sharded);

/// What the handshake's replies say.
struct handshake_outcome {
    /// Clear: connected. error::auth_failed (WRONGPASS, NOAUTH, NOPERM) and error::unsupported_server (no HELLO 3)
    /// from HELLO; error::server_error from HELLO or SELECT otherwise; error::protocol_error when the replies do
    /// not answer the request. The restore never fails the handshake: refused channels are dropped.
    error_code ec;
    std::string server_message;         ///< the error reply that failed it
    std::string client_message;         ///< what did not answer the request (protocol_error)
    server_identity server;             ///< announced by HELLO (`server`, `version`); unknown if it did not say
    bool tracking = false;              ///< the server tracks the keys this session reads
    std::string tracking_refusal;       ///< why it does not, when asked to: its error reply (never fails the handshake)
    std::vector<std::string> restored;  ///< channels the server subscribed again
    std::vector<std::string> refused;   ///< channels it refused: no longer kept
};

/// Reads `replies`, one per reply `sent` expects, in order. A refused CLIENT TRACKING leaves the session without
/// tracking (a server or an ACL user without it is still usable). Each subscribe's reply is its own: a confirmation
/// of that channel, or an error. Restored and refused channels are reported only when HELLO and SELECT succeeded.
/// A resubscription's replies read the same way (no HELLO, no SELECT; its unsubscribes must all be confirmed).
handshake_outcome read_handshake(const handshake_request& sent, const response& replies);

}  // namespace redlock::detail
