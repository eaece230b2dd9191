#include "primitives/common/release_wakeups.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/dispatch.hpp>

#include <algorithm>

namespace redlock::detail {

namespace asio = boost::asio;

std::shared_ptr<release_wakeups> release_wakeups::make(node_set& nodes)
{
    std::shared_ptr<release_wakeups> self(new release_wakeups(nodes));
    std::weak_ptr<release_wakeups> weak = self;
    for (std::size_t i = 0; i < nodes.size(); ++i) {
        nodes.at(i).set_message_handler(
            [weak, strand = nodes.strand()](std::string_view channel, std::string_view payload) {
                asio::dispatch(strand, [weak, channel = std::string(channel), payload = std::string(payload)] {
                    if (auto s = weak.lock()) s->on_message(channel, payload);
                });
            });
    }
    return self;
}

void release_wakeups::watch(const std::vector<std::string>& channels, asio::steady_timer& timer)
{
    std::vector<std::string> fresh;
    for (const auto& channel : channels) {
        watchers_[channel].push_back(&timer);
        if (subscriptions_[channel]++ == 0) fresh.push_back(channel);
    }
    if (fresh.empty()) return;
    auto subscribed = nodes_.start(
        {}, {},
        [fresh](node& n, fan_out_state& s, std::size_t i, node::completion done) {
            n.async_subscribe(fresh, s.diags[i], std::move(done));
        },
        answered, nodes_.size());
    asio::co_spawn(nodes_.strand(), note_refusals(shared_from_this(), std::move(subscribed)),
                   [](std::exception_ptr) {});
}

asio::awaitable<void> release_wakeups::note_refusals(std::shared_ptr<release_wakeups> self,
                                                     std::shared_ptr<fan_out_state> subscribed)
{
    // Bounded, so a node that never answers cannot keep this object alive.
    subscribed = co_await node_set::outcome(std::move(subscribed), until::all_answered,
                                            std::chrono::steady_clock::now() + std::chrono::seconds(30));
    if (!self->refusal_.empty()) co_return;
    for (std::size_t i = 0; i < subscribed->results.size(); ++i) {
        if (!subscribed->answered(i) || *subscribed->results[i] != error::server_error)
            continue;  // a node down refuses nothing
        self->refusal_ = "node " + self->names_[i] + " refused the subscription to release messages (" +
                         std::string(subscribed->diags[i].message()) +
                         "): waiters retry at the holder's remaining TTL instead of waking on a release";
        break;
    }
}

void release_wakeups::unwatch(const std::vector<std::string>& channels, asio::steady_timer& timer)
{
    std::vector<std::string> stale;
    for (const auto& channel : channels) {
        if (auto queue = watchers_.find(channel); queue != watchers_.end()) {
            std::erase(queue->second, &timer);
            if (queue->second.empty()) watchers_.erase(queue);
        }
        auto count = subscriptions_.find(channel);
        if (count != subscriptions_.end() && --count->second == 0) {
            subscriptions_.erase(count);
            recent_releases_.erase(channel);
            stale.push_back(channel);
        }
    }
    if (stale.empty()) return;
    nodes_.start(
        {}, {},
        [stale](node& n, fan_out_state&, std::size_t, node::completion done) {
            n.async_unsubscribe(stale, std::move(done));
        },
        answered, nodes_.size());
}

void release_wakeups::on_message(const std::string& channel, const std::string& payload)
{
    auto queue = watchers_.find(channel);
    if (queue == watchers_.end()) return;
    auto& recent = recent_releases_[channel];
    if (std::find(recent.begin(), recent.end(), payload) != recent.end()) return;  // another node's copy
    if (recent.size() == 8) recent.erase(recent.begin());
    recent.push_back(payload);
    // The longest waiting watcher that is waiting now: one busy with an attempt will see the lock state anyway.
    for (auto* timer : queue->second)
        if (timer->cancel() > 0) break;
}

}  // namespace redlock::detail
