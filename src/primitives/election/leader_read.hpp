// One read of who leads an election: the election key, its PTTL and the leader hash on every node (plain commands),
// decided by decide_leader.
#pragma once

#include "primitives/common/client_impl.hpp"
#include "primitives/election/leader_decision.hpp"

#include <redlock/diagnostics.hpp>

#include <boost/asio/awaitable.hpp>

#include <chrono>
#include <memory>
#include <string>

namespace redlock::detail {

struct leader_read {
    error_code ec;  ///< no_quorum when fewer than a quorum answered; operation_aborted when cancelled
    leader_decision decision;
    std::chrono::steady_clock::time_point started;  ///< when the read was sent: the TTLs count from there
};

/// Reads every node (connecting first, every answer awaited, each bounded by read_nodes' deadline). `diag` (may be
/// null) gets each node's outcome.
boost::asio::awaitable<leader_read> read_leader_once(std::shared_ptr<client_impl> client, std::string name,
                                                     diagnostics* diag);

/// What is wrong with an election of `name` with options `o` on `client`, or empty.
std::string invalid_election(const client_impl& client, const std::string& name, const lock_options& o);

}  // namespace redlock::detail
