// Waiting without polling: a release is published on the lock's channel, and wakes one local waiter.
#pragma once

#include "quorum/node_set.hpp"

#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>

#include <deque>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace redlock::detail {

/// On the client's strand. Each release wakes one watcher, the longest waiting, once however many nodes
/// publish it: waking them all would make one client's waiters split the nodes' votes among themselves.
/// Subscriptions are shared and counted: the first watcher of a channel subscribes, the last unsubscribes.
class release_wakeups : public std::enable_shared_from_this<release_wakeups> {
public:
    /// Routes the nodes' messages here; `nodes` must outlive this object's synchronous calls.
    static std::shared_ptr<release_wakeups> make(node_set& nodes);

    /// `timer` is woken (its wait cancelled) by a release published on one of `channels`. Unwatch before the
    /// timer dies.
    void watch(const std::vector<std::string>& channels, boost::asio::steady_timer& timer);
    void unwatch(const std::vector<std::string>& channels, boost::asio::steady_timer& timer);

    /// Why waiters fall back to timed retries (a node refused a subscription, e.g. an ACL user without channel
    /// rights), or empty. Said once per client: the first refusal is kept.
    const std::string& refusal() const noexcept { return refusal_; }

    /// A message published on `channel`: the id of one release, the same from each of the N nodes.
    void on_message(const std::string& channel, const std::string& payload);

private:
    explicit release_wakeups(node_set& nodes) : nodes_(nodes), names_(nodes.names()) {}
    static boost::asio::awaitable<void> note_refusals(std::shared_ptr<release_wakeups> self,
                                                      std::shared_ptr<fan_out_state> subscribed);

    node_set& nodes_;
    std::vector<std::string> names_;                              // a copy: note_refusals may outlive the node set
    std::unordered_map<std::string, std::size_t> subscriptions_;  // channel -> watchers
    std::unordered_map<std::string, std::deque<boost::asio::steady_timer*>> watchers_;  // oldest first
    std::unordered_map<std::string, std::vector<std::string>> recent_releases_;         // per channel, to de-duplicate
    std::string refusal_;
};

}  // namespace redlock::detail
