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
    std::vector<std::string> keys;
    std::string token;      ///< the lease's token (a reentrant lock: the id of this hold)
    std::string key_value;  ///< what the lock key holds while it is ours: the token, or a reentrant lock's owner
    lock_options options;
    std::string owner;  ///< a reentrant lock's owner, or empty
    lock_scripts::fence_step fence_step = lock_scripts::fence_step::none;
    diagnostics* diag = nullptr;
    lease_protocol protocol;  ///< what the granted lease extends and releases with (its quorum: the grant's)
    /// How a node's answer to the kind's acquire votes.
    classify_fn classify = lock_scripts::classify_acquire;
    /// The grants an attempt needs: the majority for a lock, the permit quorum of its limit for a semaphore.
    std::size_t quorum = 0;
    /// A quorum the answers decide (a semaphore's: from the limit each node reports, which a set_limit may have
    /// changed since the call was made): the quorum the answers so far call for. Null: `quorum` stands.
    std::size_t (*quorum_from)(const lock_call& call, const fan_out_state& answers) = nullptr;
    /// A semaphore: the limit the caller names (a node without one takes it) and the permits this call asks for.
    std::int64_t limit = 0;
    std::int64_t permits = 1;
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
    /// A reentrant lock: the grant was a re-entry, whose fencing token is the counter it read (no commit).
    bool (*reentered)(const response&) = nullptr;
    /// The clean-up of a failed attempt, sent to all N nodes: a release (the kind's own) with this id.
    request (*clean_up)(const std::vector<std::string>& keys, const std::string& token, std::string_view release_id,
                        std::chrono::milliseconds node_timeout) = lock_scripts::release_request;

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

/// The plain mutex's lease protocol for one-key or multi-key locks.
lease_protocol mutex_protocol(const client_impl& client, const std::string& routing_key);

/// The end of every attempt: decides on the nodes' answers (quorum, validity), issues the fencing token when
/// asked, and makes the lease; a failed attempt sends its clean-up. `result` is the attempt's fan-out, started
/// at `start`.
boost::asio::awaitable<attempt_result> conclude_attempt(std::shared_ptr<const lock_call> call,
                                                        std::shared_ptr<fan_out_state> result,
                                                        std::chrono::steady_clock::time_point start, std::uint64_t n);

}  // namespace redlock::detail
