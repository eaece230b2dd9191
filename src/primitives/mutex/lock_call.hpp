// One lock call, and the steps every kind of lock (plain, reentrant, fair) takes the same way: checking the
// arguments, the wait plan, and turning an attempt's answers into a lease (validity, fencing, clean-up).
#pragma once

#include "primitives/common/acquire_loop.hpp"
#include "primitives/common/client_impl.hpp"
#include "primitives/common/lease_protocol.hpp"
#include "primitives/mutex/lock_scripts.hpp"

#include <redlock/diagnostics.hpp>
#include <redlock/lock_options.hpp>

#include <boost/asio/awaitable.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace redlock::detail {

/// What the attempts of one lock call share; immutable once made (a kind's own mutable state lives beside it).
struct lock_call {
    std::shared_ptr<client_impl> client;
    /// The lease a grant makes: the keys, its token (a reentrant lock: the id of this hold), what the keys hold
    /// while it is ours (the token, or a reentrant lock's owner), a permit's units and the limit the caller names
    /// (a node without one takes it).
    lease_spec lease;
    lock_options options;
    lock_scripts::fence_step fence_step = lock_scripts::fence_step::none;
    diagnostics* diag = nullptr;
    /// What the granted lease extends and releases with (its quorum: the grant's). A constant of the kind's.
    const lease_protocol* protocol = nullptr;
    /// How a node's answer to the kind's acquire votes.
    classify_fn classify = lock_scripts::classify_acquire;
    /// The grants an attempt needs: the majority for a lock, the permit quorum of its limit for a semaphore.
    std::size_t quorum = 0;
    /// A quorum the answers decide (a semaphore's: from the limit each node reports, which a set_limit may have
    /// changed since the call was made): the quorum the answers so far call for. Null: `quorum` stands.
    std::size_t (*quorum_from)(const lock_call& call, const fan_out_state& answers) = nullptr;
    /// A refused attempt that no wait can turn into a grant (a semaphore's permits above the limit the refusing
    /// nodes store): why, for the diagnostics, and the call ends at once with error::exceeds_limit. Null, or an
    /// empty answer: the refusal may pass.
    std::string (*beyond_reach)(const lock_call& call, const fan_out_state& answers) = nullptr;
    /// A fair call: the acquire of a waiter holding `ticket` (0: none yet; `take_ticket`: a single node hands one
    /// out when it refuses).
    request (*fair_acquire)(const lock_call& call, std::uint64_t ticket, bool take_ticket) = nullptr;
    /// How the kind's acquire answers read.
    std::optional<std::chrono::milliseconds> (*holder_ttl)(const response&) = lock_scripts::holder_ttl;
    std::optional<std::uint64_t> (*fence_of)(const response&) = lock_scripts::granted_fence;
    /// A reentrant lock: the token committed to the owner's holds on the granting node (0: none).
    std::optional<std::uint64_t> (*committed_fence)(const response&) = nullptr;
    /// Fencing over N nodes, phase 2: commits `fence` where the lease still holds the keys.
    request (*commit)(const lease_spec& lease, std::uint64_t fence,
                      std::chrono::milliseconds node_timeout) = lock_scripts::commit_request;
    /// The clean-up of a failed attempt, sent to all N nodes: a release (the kind's own) with this id.
    request (*clean_up)(const lease_spec& lease, std::string_view release_id,
                        std::chrono::milliseconds node_timeout) = lock_scripts::release_request;

    const std::vector<std::string>& keys() const noexcept { return lease.keys; }

    /// Sends attempt n's clean-up, with its clean-up id (clean_up_id: its messages free nodes, they do not wake
    /// a waiter as a holder's release does), to every node that may hold a grant of it: all but those that
    /// refused (a refusal is a definite answer: that node granted nothing). Nothing when every node refused.
    void release_attempt(std::uint64_t n, const fan_out_state& attempt) const;
};

/// Sends an attempt's acquire to every node and returns once the call's quorum rule decides it (`wait_for` as
/// node_set::fan_out has it); with `quorum_from`, the rule is applied again as answers come in.
boost::asio::awaitable<std::shared_ptr<fan_out_state>> fan_out_acquire(std::shared_ptr<const lock_call> call,
                                                                       std::shared_ptr<const request> acquire,
                                                                       until wait_for = until::decided);

/// Attempts that each send the same acquire (the same id every time, so one that lands twice grants once) and
/// conclude as every attempt does.
attempt_fn same_request_attempts(std::shared_ptr<const lock_call> call, std::shared_ptr<const request> acquire);

/// What is wrong with these arguments, or an empty string. Checked before any I/O.
std::string invalid_arguments(const client_impl& client, const std::vector<std::string>& keys, const lock_options& o,
                              const std::string& owner);

/// The wait plan of a lock call on `keys` (gate, channels, deadline, retry delays).
acquire_plan make_plan(const std::vector<std::string>& keys, const lock_options& o, bool one_attempt);

/// The plain mutex's lease protocol, for one-key and multi-key locks.
const lease_protocol& mutex_protocol();

/// The end of every attempt: decides on the nodes' answers (quorum, validity), issues the fencing token when
/// asked, and makes the lease; a failed attempt sends its clean-up. `result` is the attempt's fan-out, started
/// at `start`.
boost::asio::awaitable<attempt_result> conclude_attempt(std::shared_ptr<const lock_call> call,
                                                        std::shared_ptr<fan_out_state> result,
                                                        std::chrono::steady_clock::time_point start, std::uint64_t n);

}  // namespace redlock::detail
