#include "primitives/common/key_watch.hpp"
#include "primitives/common/lease_state.hpp"

#include <redlock/key_layout.hpp>

#include <boost/asio/dispatch.hpp>

#include <algorithm>
#include <unordered_set>

namespace redlock::detail {

namespace asio = boost::asio;

std::shared_ptr<key_watch> key_watch::make(std::shared_ptr<node_set> nodes, std::weak_ptr<release_wakeups> wakeups,
                                           logger log)
{
    std::shared_ptr<key_watch> self(new key_watch(std::move(nodes), std::move(wakeups), std::move(log)));
    std::weak_ptr<key_watch> weak = self;
    auto& all = *self->nodes_;
    for (std::size_t i = 0; i < all.size(); ++i) {
        all.at(i).set_tracking_handler([weak, strand = all.strand(), i](const tracking_news& news) {
            asio::dispatch(strand, [weak, news, i] {
                if (auto s = weak.lock()) s->on_news(i, news);
            });
        });
    }
    return self;
}

void key_watch::add(const std::shared_ptr<lease_state>& lease)
{
    for (const auto& key : lease->keys()) {
        auto [at, added] = leases_.try_emplace(key);
        if (!added && at->second.empty()) --unused_;  // a key locked again: its entry and list are reused
        at->second.push_back(lease);
    }
    ++watched_;
}

void key_watch::remove(const lease_state& lease)
{
    for (const auto& key : lease.keys()) {
        auto at = leases_.find(key);
        if (at == leases_.end()) continue;
        auto& list = at->second;
        const bool was_used = !list.empty();
        std::erase_if(list, [&](const std::weak_ptr<lease_state>& w) {
            auto l = w.lock();
            return !l || l.get() == &lease;
        });
        if (was_used && list.empty()) ++unused_;
    }
    if (watched_ > 0) --watched_;
    if (kept_entries::sweep_due(unused_, watched_)) {  // the entries of keys no longer held
        std::erase_if(leases_, [](const auto& entry) { return entry.second.empty(); });
        unused_ = 0;
    }
}

void key_watch::on_news(std::size_t node, const tracking_news& news)
{
    if (!news.refusal.empty()) {
        if (node < refusal_told_.size() && !refusal_told_[node] && log_) {
            refusal_told_[node] = true;
            log_(log_level::warning, "node " + nodes_->names()[node] + " refused client tracking (" + news.refusal +
                                         "): a lease whose keys vanish there is known lost at its next extension, "
                                         "not at once");
        }
        return;
    }
    if (news.all) {
        // Each lease once (a lease of several keys is listed under each).
        std::unordered_set<std::shared_ptr<lease_state>> every;
        for (const auto& [key, list] : leases_)
            for (const auto& w : list)
                if (auto l = w.lock()) every.insert(std::move(l));
        for (const auto& l : every) l->on_key_news(node);
        if (auto wakeups = wakeups_.lock()) wakeups->on_node_news(node);
        return;
    }
    for (const auto& key : news.keys) tell(key, node);
}

void key_watch::tell(const std::string& key, std::size_t node)
{
    if (auto wakeups = wakeups_.lock()) wakeups->on_key_news(release_channel(key), node);
    auto at = leases_.find(key);
    if (at == leases_.end()) return;
    std::vector<std::shared_ptr<lease_state>> leases;
    for (const auto& w : at->second)
        if (auto l = w.lock()) leases.push_back(std::move(l));
    for (const auto& l : leases) l->on_key_news(node);
}

}  // namespace redlock::detail
