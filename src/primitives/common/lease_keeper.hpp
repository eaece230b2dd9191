// The watchdog of every lease of a client: one timer, woken when the earliest lease is due. The due leases of a
// protocol that extends in batches go out together, up to a batch's size per request (one script call per node
// prolongs them all), a few batches at a time; the others extend alone; a lease whose validity ended is declared
// lost. A held lease costs an entry here, not a coroutine and a timer of its own.
#pragma once

#include "common/completion.hpp"

#include <boost/asio/steady_timer.hpp>

#include <chrono>
#include <cstddef>
#include <deque>
#include <map>
#include <memory>
#include <vector>

namespace redlock::detail {

class lease_state;

class lease_keeper : public std::enable_shared_from_this<lease_keeper> {
public:
    using clock = std::chrono::steady_clock;
    // Weak: the schedule must not keep a lease, and through it the client, alive (the lease handle does).
    using schedule_type = std::multimap<clock::time_point, std::weak_ptr<lease_state>>;
    using entry = schedule_type::iterator;

    /// Lease keys per batched request (a lease of several keys counts each): bounds how long one script call keeps a
    /// node busy (about 0.3 ms here for 500).
    static constexpr std::size_t max_batch = 500;
    /// The same where a node tracks keys (node_config::track_keys). Redis 7.0 then remembers every key a script
    /// names at each read inside it: a script over k keys costs k * k insertions into the tracking table, and a
    /// batch of 248 leases took 6 ms of the server instead of 0.8 (100,000 leases held: the server saturated,
    /// extensions timed out and leases were lost). 32 keeps that cost below the script's own (measured: 7 us of
    /// the server per lease at 32, 11 at 128).
    static constexpr std::size_t max_tracked_batch = 32;

    /// How early an extension may go (at most a tenth of its interval), so that leases due close together
    /// share a batch.
    static constexpr std::chrono::milliseconds batch_window{50};

    /// Extension batches in flight at once; the others wait here, in order. A node timeout counts from the request's
    /// submission, so a round's batches sent all at once queued on the node past it: 20,000 tracked leases held on
    /// one node saw 6,000 to 15,000 extensions fail in 10 s (retried, none lost), and each batch that timed out
    /// still ran there, keeping the queue long. Four keep a node busy while a batch waits at most three others.
    static constexpr std::size_t max_batches_in_flight = 4;

    /// `batch_keys`: max_batch, or max_tracked_batch where the nodes track keys.
    lease_keeper(const strand_type& strand, std::size_t batch_keys) : timer_(strand), batch_keys_(batch_keys) {}

    // On the strand.
    entry schedule(const std::shared_ptr<lease_state>& lease, clock::time_point at);
    void unschedule(entry e);
    std::size_t scheduled() const noexcept { return schedule_.size(); }

private:
    void arm();
    void on_timer();
    using batch = std::vector<std::shared_ptr<lease_state>>;
    void start_batch(const batch& leases);
    void batch_done();

    schedule_type schedule_;
    boost::asio::steady_timer timer_;
    std::size_t batch_keys_;
    clock::time_point armed_for_ = clock::time_point::max();
    // Weak, as the schedule: a waiting batch must not keep its leases, and through them the client and this keeper,
    // alive (an io_context destroyed with batches in flight never starts the waiting ones).
    std::deque<std::vector<std::weak_ptr<lease_state>>> waiting_batches_;
    std::size_t batches_in_flight_ = 0;
};

}  // namespace redlock::detail
