// The election's requests and how a node's answers read: the proclaim (proclaim.lua) and the read of who leads (plain
// commands). Its lease is the plain lock's (primitives/mutex), taken through the plain lock kind.
#pragma once

#include "primitives/election/leader_decision.hpp"
#include "quorum/tally.hpp"

#include <redlock/error.hpp>
#include <redlock/request.hpp>
#include <redlock/response.hpp>

#include <chrono>
#include <cstdint>
#include <string>

namespace redlock::detail::election_scripts {

/// proclaim.lua on the election `name`: writes `value` at `revision` where the key holds `token`, and publishes
/// `message` on the elected channel.
request proclaim_request(const std::string& name, const std::string& token, std::uint64_t term,
                         const std::string& value, std::uint64_t revision, const std::string& message,
                         std::chrono::milliseconds node_timeout);
/// yes: written (1); no: not the leader there (0); error otherwise.
vote classify_proclaim(error_code ec, const response& resp);

/// `GET name`, `PTTL name`, `HMGET leader_key(name) token term value revision`: plain commands, no script.
request read_request(const std::string& name, std::chrono::milliseconds timeout);
/// yes when the three replies came (an error reply in one of them too: the node answered); error otherwise.
vote classify_read(error_code ec, const response& resp);
/// A node's answer to read_request (`ec` and `resp` as the fan-out recorded them; unanswered: answered false).
node_leader_view read_view(bool answered, error_code ec, const response& resp);

}  // namespace redlock::detail::election_scripts
