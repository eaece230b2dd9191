// How a fan-out's tally becomes the outcome of a lease operation: written once per operation, pure.
#pragma once

#include "quorum/tally.hpp"

#include <redlock/error.hpp>

#include <boost/asio/error.hpp>

#include <chrono>

namespace redlock::detail {

/// One acquire attempt, decided at the quorum: granted only with a quorum and more validity left than the
/// minimum. `validity_left` is measured after the decision (valid_until - now).
inline error_code decide_acquire(const quorum_tally& tally, std::chrono::nanoseconds validity_left,
                                 std::chrono::milliseconds min_validity) noexcept
{
    if (tally.decide() != quorum_tally::decision::reached)
        return make_error_code(tally.failed_by_errors() ? error::no_quorum : error::not_acquired);
    if (validity_left <= min_validity) return make_error_code(error::timeout);  // granted, but too late
    return {};
}

/// Phase 2 of fencing over N nodes (the commit), bounded by the validity: as an acquire, and a deadline that
/// passed before the quorum is a timeout.
inline error_code decide_commit(const quorum_tally& tally, bool expired, std::chrono::nanoseconds validity_left,
                                std::chrono::milliseconds min_validity) noexcept
{
    if (tally.decide() == quorum_tally::decision::pending && expired) return make_error_code(error::timeout);
    return decide_acquire(tally, validity_left, min_validity);
}

/// With replica acknowledgement: an operation that failed (`failure`), but whose quorum the grants too few replicas
/// acknowledged (`unacknowledged`, error votes in `tally`) would have made, failed for want of acknowledgement:
/// error::replica_acks, rather than no_quorum or not_acquired. Other failures stand (a quorum granted too late).
inline error_code for_want_of_acks(error_code failure, const quorum_tally& tally, std::size_t unacknowledged) noexcept
{
    if (failure && tally.yes() < tally.quorum() && unacknowledged > 0 && tally.yes() + unacknowledged >= tally.quorum())
        return make_error_code(error::replica_acks);
    return failure;
}

/// An extension. `late`: it completed after the validity in force ended (whatever the nodes said, someone
/// else may have held the lock in between). The lease is lost when late, or when other owners answered on
/// enough nodes that no quorum can be ours; otherwise a failure leaves it held until its validity ends.
struct extend_outcome {
    error_code ec;
    bool lease_lost = false;
};
inline extend_outcome decide_extend(const quorum_tally& tally, bool expired, bool late) noexcept
{
    if (late) return {make_error_code(error::lost), true};
    if (tally.decide() == quorum_tally::decision::reached) return {};
    if (tally.no() > tally.nodes() - tally.quorum()) return {make_error_code(error::not_owner), true};
    return {make_error_code(expired ? error::timeout : error::no_quorum), false};
}

/// A release, after every node answered or hit its deadline. A lease lost before its release reports the loss:
/// the protection had ended early, whatever the nodes said.
inline error_code decide_release(const quorum_tally& tally, bool was_lost) noexcept
{
    if (was_lost) return make_error_code(error::lost);
    if (tally.decide() == quorum_tally::decision::reached) return {};
    if (tally.no() > tally.nodes() - tally.quorum()) return make_error_code(error::not_owner);
    return make_error_code(error::no_quorum);
}

}  // namespace redlock::detail
