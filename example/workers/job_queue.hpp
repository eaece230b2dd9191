// A reliable job queue on one Redis list: a job moves atomically from `jobs:pending` to this process's own
// processing list when taken, and leaves it only when done. A process that dies leaves its jobs there; any other
// process that finds the dead one's liveness lock free moves them back to pending.
#pragma once

#include <redlock/redlock.hpp>

#include <boost/asio/awaitable.hpp>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace workers {

inline const std::string pending_list = "jobs:pending";

/// A process's processing list: `jobs:processing:<process>`.
std::string processing_list(const std::string& process);
/// The lock a live process holds (with the watchdog) for as long as it takes jobs.
std::string liveness_lock(const std::string& process);

/// Pushes `count` jobs "job-<n>:account-<n % accounts>".
boost::asio::awaitable<void> seed(const redlock::redis& store, int count, int accounts);

class job_queue {
public:
    /// `store` is this coroutine's own connection: a blocking take holds up a connection's pipeline while it waits.
    job_queue(redlock::connection& store, std::string process) : store_(store), process_(std::move(process)) {}

    /// The next job, moved to this process's processing list; nullopt when none came within `wait`.
    boost::asio::awaitable<std::optional<std::string>> take(std::chrono::seconds wait);
    /// Done: off the processing list.
    boost::asio::awaitable<void> done(const std::string& job);
    /// Failed here: back to the front of the pending list, for any process to try again.
    boost::asio::awaitable<void> give_back(const std::string& job);

private:
    redlock::connection& store_;
    std::string process_;
};

/// Moves back to pending the jobs of every process whose liveness lock is free (it died), taking that lock while
/// it does so. Returns how many jobs it moved.
boost::asio::awaitable<int> recover_dead(redlock::client& locks, const redlock::redis& store, const std::string& self);

/// Nothing pending and nothing in any processing list: every job is done.
boost::asio::awaitable<bool> drained(const redlock::redis& store);

}  // namespace workers
