#include "primitives/common/client_counters.hpp"

#include <boost/asio/error.hpp>

#include <algorithm>

namespace redlock::detail {

void client_counters::acquire_ended(error_code ec, std::chrono::steady_clock::duration took,
                                    const wait_summary& waiting, bool handoff) noexcept
{
    bump(wakeups_by_message_, waiting.woken_by_release);
    bump(wakeups_by_timer_, waiting.timed_retries);
    if (ec) {
        if (ec == error::not_acquired)
            bump(not_acquired_);
        else if (ec == error::no_quorum)
            bump(no_quorum_);
        else if (ec == error::timeout)
            bump(timeout_);
        else if (ec == boost::asio::error::operation_aborted)
            bump(cancelled_);
        else if (ec == error::invalid_argument)
            bump(invalid_argument_);
        else if (ec == error::exceeds_limit)
            bump(exceeds_limit_);
        else if (ec == error::replica_acks)
            bump(replica_acks_);
        else
            bump(other_failures_);
        return;
    }
    bump(acquires_);
    if (handoff) bump(handoffs_);
    const double seconds = std::chrono::duration<double>(took).count();
    const auto& b = latency_histogram::bounds;
    bump(buckets_[static_cast<std::size_t>(std::lower_bound(b.begin(), b.end(), seconds) - b.begin())]);
    bump(latency_ns_, static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(took).count()));
}

void client_counters::snapshot(client_stats& out) const noexcept
{
    out.acquires = read(acquires_);
    out.failures = {.not_acquired = read(not_acquired_),
                    .no_quorum = read(no_quorum_),
                    .timeout = read(timeout_),
                    .cancelled = read(cancelled_),
                    .invalid_argument = read(invalid_argument_),
                    .exceeds_limit = read(exceeds_limit_),
                    .replica_acks = read(replica_acks_),
                    .other = read(other_failures_)};
    std::uint64_t cumulative = 0;
    for (std::size_t i = 0; i < buckets_.size(); ++i) out.acquire_latency.counts[i] = cumulative += read(buckets_[i]);
    out.acquire_latency.sum_seconds = static_cast<double>(read(latency_ns_)) / 1e9;
    out.handoffs = read(handoffs_);
    out.wakeups_by_message = read(wakeups_by_message_);
    out.wakeups_by_timer = read(wakeups_by_timer_);
    out.extensions = read(extensions_);
    out.extension_failures = read(extension_failures_);
    out.releases = read(releases_);
    out.release_failures = read(release_failures_);
    out.losses = read(losses_);
    out.bloom_filter_missing = read(bloom_filter_missing_);
}

}  // namespace redlock::detail
