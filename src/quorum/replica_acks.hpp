// Replica acknowledgement: a request whose writes count on a node only once its replicas have them. The request
// ends with WAIT, in the same pipeline on the same connection (a Cluster node routes it whole by its routing key,
// so the WAIT follows the write at the same master); the WAIT's reply is taken off before the request's own replies
// are read, so every reader sees them as it would without it.
#pragma once

#include "quorum/tally.hpp"

#include <redlock/diagnostics.hpp>
#include <redlock/error.hpp>
#include <redlock/request.hpp>
#include <redlock/response.hpp>

#include <chrono>
#include <cstdint>

namespace redlock::detail {

/// Turns one node's answer into a vote.
using classify_fn = vote (*)(error_code ec, const response& resp);

/// How many replicas must acknowledge, and how long each node's WAIT may block.
struct replica_acks {
    std::uint32_t replicas = 0;  ///< 0: off
    std::chrono::milliseconds timeout{0};
    bool on() const noexcept { return replicas > 0; }
    friend bool operator==(const replica_acks&, const replica_acks&) = default;
};

/// `req` followed by `WAIT replicas timeout`, its deadline longer by the WAIT's timeout. `acks.timeout` must be at
/// least 1 ms: WAIT with 0 blocks for ever.
request acknowledged(const request& req, replica_acks acks);

/// One node's answer to an acknowledged request (`expected`: the replies it expects, the WAIT's included). Takes the
/// WAIT's reply off `resp`, and returns the answer's error: as it was, or error::replica_acks (its text in `diag`)
/// when `classify` reads the rest as a yes that fewer than `acks.replicas` acknowledged. A WAIT that failed (an
/// error reply: the node is a replica, or an ACL refuses WAIT) stays in `resp`, and the answer is that error.
error_code judge_acknowledgement(error_code ec, response& resp, std::size_t expected, replica_acks acks,
                                 classify_fn classify, diagnostics& diag);

}  // namespace redlock::detail
