// Reading what a primitive looks like on every node (inspect): connected first, every node's answer awaited.
#pragma once

#include "primitives/common/client_impl.hpp"

#include <boost/asio/awaitable.hpp>

#include <chrono>
#include <memory>
#include <string>

namespace redlock::detail {

/// The deadline of a read on a node that connected but does not answer (its connect timeout bounds one down).
inline constexpr std::chrono::milliseconds read_deadline{2000};

/// Sends `req` (its deadline: read_deadline) to every node, connecting each first so that a node still
/// connecting is read rather than reported down, and returns once every node answered or its time ran out.
boost::asio::awaitable<std::shared_ptr<fan_out_state>> read_nodes(std::shared_ptr<client_impl> client,
                                                                  std::shared_ptr<const request> req,
                                                                  std::string routing_key, classify_fn classify);

/// A read succeeds when a quorum answered; otherwise error::no_quorum, and `diag` (may be null) says how many did.
error_code read_outcome(std::size_t reachable, std::size_t nodes, std::size_t quorum, diagnostics* diag);

}  // namespace redlock::detail
