// One lock call, and the steps every kind of lock (plain, fair, reentrant, a semaphore's permit) takes the same way:
// checking the arguments, the wait plan, running the attempts, and turning an attempt's answers into a lease
// (quorum, validity, fencing) or a clean-up. What differs between the kinds is their lock_kind.
#pragma once

#include "primitives/common/acquire_loop.hpp"
#include "primitives/common/client_impl.hpp"
#include "primitives/common/fencing.hpp"
#include "primitives/common/lease_protocol.hpp"
#include "primitives/common/lock_kind.hpp"

#include <redlock/diagnostics.hpp>
#include <redlock/lock_options.hpp>

#include <boost/asio/awaitable.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

namespace redlock::detail {

/// What the attempts of one lock call share; immutable once made (a kind's own mutable state lives beside it).
struct lock_call {
    std::shared_ptr<client_impl> client;
    const lock_kind* kind = nullptr;
    /// The lease a grant makes: the keys, its token (a reentrant lock: the id of this hold), what the keys hold
    /// while it is ours (the token, or a reentrant lock's owner), a permit's units and the limit the caller names
    /// (a node without one takes it).
    std::shared_ptr<const lease_spec> spec;  ///< shared with the lease a grant makes
    const lease_spec& lease() const noexcept { return *spec; }
    lock_options options;  ///< checked, with node_timeout set
    fence_step fence = fence_step::none;
    /// Replica acknowledgement of every grant and fencing commit (off unless options.replica_acks > 0).
    replica_acks acks;
    /// The grants an attempt needs: the majority for a lock, the permit quorum of its limit for a semaphore.
    std::size_t quorum = 0;
    diagnostics* diag = nullptr;

    /// Sends attempt n's clean-up, with its clean-up id (clean_up_id: its messages free nodes, they do not wake
    /// a waiter as a holder's release does), to every node that may hold a grant of it: all but those that
    /// refused (a refusal is a definite answer: that node granted nothing). Nothing when every node refused.
    void release_attempt(std::uint64_t n, const fan_out_state& attempt) const;
};

/// What is wrong with these arguments, or an empty string. Checked before any I/O.
std::string invalid_arguments(const client_impl& client, const std::vector<std::string>& keys, const lock_options& o,
                              const std::string& owner);

/// The acknowledgement `o` asks for (`o` checked, node_timeout set): replica_ack_timeout 0 is node_timeout.
replica_acks acks_of(const lock_options& o) noexcept;

/// The lock call of `kind` for `lease`, with options `o` (checked: node_timeout is set from the ttl when 0).
std::shared_ptr<lock_call> make_call(std::shared_ptr<client_impl> client, const lock_kind& kind, lease_spec lease,
                                     lock_options o, std::size_t quorum, diagnostics* diag);

/// Runs the call's attempts (the kind's) in the acquire loop until one is granted, the wait ends, it fails for
/// good or is cancelled; a fair waiter that gives up leaves its queue. `one_attempt`: a try.
boost::asio::awaitable<std::tuple<error_code, std::shared_ptr<lease_state>>> run_call(
    std::shared_ptr<const lock_call> call, bool one_attempt);

/// Sends an attempt's acquire to every node and returns once the call's quorum rule decides it (`wait_for` as
/// node_set::fan_out has it); with the kind's quorum_from, the rule is applied again as answers come in. With
/// replica acknowledgement the acquire goes out with its WAIT, and a grant counts only where it was acknowledged.
boost::asio::awaitable<std::shared_ptr<fan_out_state>> fan_out_acquire(std::shared_ptr<const lock_call> call,
                                                                       std::shared_ptr<const request> acquire,
                                                                       until wait_for = until::decided);

/// Attempts that each send the same acquire (the same id every time, so one that lands twice grants once) and
/// conclude as every attempt does.
attempt_fn same_request_attempts(std::shared_ptr<const lock_call> call, std::shared_ptr<const request> acquire);

/// The end of every attempt: decides on the nodes' answers (quorum, validity), issues the fencing token when
/// asked, and makes the lease; a failed attempt sends its clean-up. `result` is the attempt's fan-out, started
/// at `start`.
boost::asio::awaitable<attempt_result> conclude_attempt(std::shared_ptr<const lock_call> call,
                                                        std::shared_ptr<fan_out_state> result,
                                                        std::chrono::steady_clock::time_point start, std::uint64_t n);

/// conclude_attempt for a call without fencing, which has nothing to wait for: no coroutine frame.
attempt_result conclude_unfenced_attempt(const std::shared_ptr<const lock_call>& call, const fan_out_state& result,
                                         std::chrono::steady_clock::time_point start, std::uint64_t n);

}  // namespace redlock::detail
