// Watches a fair queue (`{name}:queue` and `{name}:alive`, doc/locks.md "Fair lock") on every node from a thread
// of its own, over direct connections (not through a test's proxies), every few ms: when each waiter heartbeats
// (its alive score is the server time of its last heartbeat plus its waiter TTL), and whether a waiter not yet
// served ever dropped out (its entry gone, or its heartbeat ended).
#pragma once

#include <redlock/connection.hpp>

#include <boost/asio/awaitable.hpp>

#include <atomic>
#include <chrono>
#include <common/servers/redis_node.hpp>
#include <cstdint>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace redlock::test {

class fair_queue_watch {
public:
    struct report {
        std::size_t samples = 0;  ///< node samples read
        /// The longest time between two heartbeats of one waiter on one node (server time), and whose.
        std::chrono::milliseconds longest_gap{0};
        std::string longest_gap_of;
        /// A waiter not served whose entry left a queue, whose heartbeat had ended (alive score <= the server's
        /// time) or that had no heartbeat entry: each episode once.
        std::size_t evictions = 0;
        std::vector<std::string> events;              ///< the first evictions, in words
        std::vector<std::string> errors;              ///< samples that failed
        std::map<std::string, std::uint64_t> ticket;  ///< every waiter seen, with its ticket
        /// Per node, the longest a look at it took over the direct connection: a node that stalled (a loaded
        /// machine) delays the heartbeats it runs too.
        std::vector<std::chrono::milliseconds> slowest_look;
        /// Per path (the URLs given, say the test's proxies), the longest round trip of a PING through it: above
        /// the waiters' node timeout, the machine did not keep up with the premise of their heartbeat budget.
        std::vector<std::chrono::milliseconds> slowest_path;
    };

    /// Starts polling `name`'s queue on every node of `nodes` every `period`, and PINGing each of `paths`, one at a
    /// time each. Every waiter of the queue is expected to heartbeat with `waiter_ttl`.
    fair_queue_watch(const cluster& nodes, std::string name, std::chrono::milliseconds waiter_ttl,
                     std::vector<std::string> paths = {},
                     std::chrono::milliseconds period = std::chrono::milliseconds(3));
    ~fair_queue_watch();
    fair_queue_watch(const fair_queue_watch&) = delete;
    fair_queue_watch& operator=(const fair_queue_watch&) = delete;

    /// The waiter `token` was served (granted): its entry may leave from now on. Call it before the holder
    /// releases.
    void served(const std::string& token);
    /// How many waiters every node has queued (since the watch began).
    std::size_t joined_everywhere() const;
    /// Stops polling (idempotent) and says what it saw.
    report stop();
    /// When the watch began: events say how long after it they were seen.
    std::chrono::steady_clock::time_point started() const { return started_; }

private:
    struct entry {
        std::int64_t heartbeat = 0;  // server ms of its last heartbeat seen
        bool expired = false;        // its heartbeat ended (reported once)
        bool gone = false;           // it left the queue (reported once)
    };
    boost::asio::awaitable<void> poll(std::vector<connection>& conns);
    boost::asio::awaitable<void> time_path(connection& conn, std::size_t i);
    void run();
    void sample(std::size_t node, std::int64_t now, const std::vector<std::pair<std::string, std::string>>& queue,
                const std::vector<std::pair<std::string, std::string>>& alive);
    void event(std::string what);

    std::vector<std::string> urls_;
    std::vector<std::string> paths_;
    std::string name_;
    std::chrono::milliseconds waiter_ttl_;
    std::chrono::milliseconds period_;
    std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
    std::atomic<bool> stopping_{false};
    mutable std::mutex mutex_;
    std::set<std::string> served_;
    std::vector<std::map<std::string, entry>> nodes_;  // per node: the waiters not served it queues
    report report_;
    std::thread thread_;
};

}  // namespace redlock::test
