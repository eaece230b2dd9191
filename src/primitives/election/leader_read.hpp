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

/// Reads every node, every answer awaited (each bounded by read_deadline). `connect_first`: a node still connecting is
/// waited for (its connect timeout), as read_nodes does, so a first read finds every node that is up; without it a node
/// that is down or reconnecting counts as not answering at once (an observer's later reads: a node down must not delay
/// each of them by its reconnection backoff). `diag` (may be null) gets each node's outcome.
boost::asio::awaitable<leader_read> read_leader_once(std::shared_ptr<client_impl> client, std::string name,
                                                     diagnostics* diag, bool connect_first = true);

/// What is wrong with an election of `name` with options `o` on `client`, or empty.
std::string invalid_election(const client_impl& client, const std::string& name, const lock_options& o);

}  // namespace redlock::detail
