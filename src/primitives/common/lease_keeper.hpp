// The watchdog of every lease of a client: one timer, woken when the earliest lease is due. The due leases of a
// protocol that extends in batches go out together, up to max_batch per request (one script call per node
// prolongs them all); the others extend alone; a lease whose validity ended is declared lost. A held lease
// costs an entry here, not a coroutine and a timer of its own.
#pragma once

#include "common/completion.hpp"

#include <boost/asio/steady_timer.hpp>

#include <chrono>
#include <cstddef>
#include <map>
#include <memory>

namespace redlock::detail {

class lease_state;

class lease_keeper : public std::enable_shared_from_this<lease_keeper> {
public:
    using clock = std::chrono::steady_clock;
    // Weak: the schedule must not keep a lease, and through it the client, alive (the lease handle does).
    using schedule_type = std::multimap<clock::time_point, std::weak_ptr<lease_state>>;
    using entry = schedule_type::iterator;

    /// Leases per batched request: bounds how long one script call keeps a node busy (about 0.3 ms here).
    static constexpr std::size_t max_batch = 500;

    /// How early an extension may go (at most a tenth of its interval), so that leases due close together
    /// share a batch.
    static constexpr std::chrono::milliseconds batch_window{50};

    explicit lease_keeper(const strand_type& strand) : timer_(strand) {}

    // On the strand.
    entry schedule(const std::shared_ptr<lease_state>& lease, clock::time_point at);
    void unschedule(entry e);
    std::size_t scheduled() const noexcept { return schedule_.size(); }

private:
    void arm();
    void on_timer();

    schedule_type schedule_;
    boost::asio::steady_timer timer_;
    clock::time_point armed_for_ = clock::time_point::max();
};

}  // namespace redlock::detail
