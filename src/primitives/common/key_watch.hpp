// Lease loss known at once: client tracking's news of the nodes' keys (node_config::track_keys), routed to the leases
// whose keys they name, each of which then reads that node again (lease_state::on_key_news), and to the waiters of
// those keys' release channels (a holder whose keys vanished without a release: expired, deleted, evicted).
#pragma once

#include "common/kept_entries.hpp"
#include "primitives/common/release_wakeups.hpp"
#include "quorum/node_set.hpp"

#include <redlock/connection.hpp>

#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace redlock::detail {

class lease_state;

/// On the client's strand. Holds the leases by weak_ptr: a lease's handle, not this registry, keeps it.
class key_watch {
public:
    using logger = release_wakeups::logger;

    /// Routes the nodes' tracking news here. Shares `nodes`; `wakeups` and `log` as release_wakeups::make says of its
    /// own (the client's state may die on another thread while news arrives).
    static std::shared_ptr<key_watch> make(std::shared_ptr<node_set> nodes, std::weak_ptr<release_wakeups> wakeups,
                                           logger log);

    /// `lease` is held: news of its keys goes to it until remove.
    void add(const std::shared_ptr<lease_state>& lease);
    void remove(const lease_state& lease);
    /// Leases watched (the tests').
    std::size_t size() const noexcept { return watched_; }

    /// What node `node` said (public for the tests; the nodes' handlers call it on the strand).
    void on_news(std::size_t node, const tracking_news& news);

private:
    key_watch(std::shared_ptr<node_set> nodes, std::weak_ptr<release_wakeups> wakeups, logger log)
        : nodes_(std::move(nodes)),
          wakeups_(std::move(wakeups)),
          log_(std::move(log)),
          refusal_told_(nodes_->size(), false)
    {}
    void tell(const std::string& key, std::size_t node);

    std::shared_ptr<node_set> nodes_;
    std::weak_ptr<release_wakeups> wakeups_;
    logger log_;
    std::unordered_map<std::string, std::vector<std::weak_ptr<lease_state>>> leases_;  // by key; lists may be empty
    std::size_t watched_ = 0;
    std::size_t unused_ = 0;          // entries whose list is empty
    std::vector<bool> refusal_told_;  // per node: its refusal was logged (once per client)
};

}  // namespace redlock::detail
