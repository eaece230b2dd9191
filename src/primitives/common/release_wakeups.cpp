#include "primitives/common/release_wakeups.hpp"

#include <boost/asio/bind_executor.hpp>
#include <boost/asio/dispatch.hpp>

#include <algorithm>
#include <charconv>

namespace redlock::detail {

namespace asio = boost::asio;
using clock = std::chrono::steady_clock;

namespace {
// Tokens are hex: a leading '~' cannot start a holder's release id, nor a '+' a waiter's token.
constexpr char clean_up_mark = '~';
constexpr char permits_mark = '+';
constexpr std::string_view writers_only = "=w";
}  // namespace

std::string clean_up_id(const std::string& token, std::uint64_t n)
{
    return clean_up_mark + token + ":" + std::to_string(n);
}

std::shared_ptr<release_wakeups> release_wakeups::make(std::shared_ptr<node_set> nodes, logger log,
                                                       std::chrono::milliseconds linger_for)
{
    std::shared_ptr<release_wakeups> self(new release_wakeups(std::move(nodes), std::move(log), linger_for));
    std::weak_ptr<release_wakeups> weak = self;
    auto& all = *self->nodes_;
    // The handler holds the strand (a copy) and a weak_ptr: nothing of the client's state.
    for (std::size_t i = 0; i < all.size(); ++i) {
        all.at(i).set_message_handler(
            [weak, strand = all.strand(), i](std::string_view channel, std::string_view payload) {
                asio::dispatch(strand, [weak, channel = std::string(channel), payload = std::string(payload), i] {
                    if (auto s = weak.lock()) s->on_message(channel, payload, i);
                });
            });
    }
    return self;
}

release_wakeups::channel_state& release_wakeups::channel(const std::string& name)
{
    auto [it, fresh] = channels_.try_emplace(name);
    if (fresh) {
        it->second.nodes.assign(nodes_->size(), node_state::none);
        it->second.asked.assign(nodes_->size(), false);
        it->second.generation = ++generations_;
    }
    return it->second;
}

void release_wakeups::watch(const std::vector<std::string>& channels, release_watcher& w)
{
    if (channels.empty()) return;  // a try: nothing to hear
    for (const auto& name : channels) channel(name).watchers.push_back(&w);
    w.freed.assign(nodes_->size(), false);
    w.channels = channels.size();
}

void release_wakeups::observe(const std::vector<std::string>& channels, release_observer& o)
{
    for (const auto& name : channels) channel(name).observers.push_back(&o);
}

void release_wakeups::unobserve(const std::vector<std::string>& channels, release_observer& o)
{
    for (const auto& name : channels) {
        auto it = channels_.find(name);
        if (it == channels_.end()) continue;
        std::erase(it->second.observers, &o);
        left(it->second);
    }
}

// Someone left the channel: with nobody left, it lingers, then the sweep unsubscribes it.
void release_wakeups::left(channel_state& state)
{
    if (state.watchers.empty() && state.observers.empty()) {
        state.idle_since = clock::now();
        schedule_sweep();
    }
}

void release_wakeups::unwatch(const std::vector<std::string>& channels, release_watcher& w)
{
    for (const auto& channel : channels) {
        auto it = channels_.find(channel);
        if (it == channels_.end()) continue;
        auto& state = it->second;
        std::erase(state.watchers, &w);
        // Woken, but gone before an attempt answered: the release is the next one's (a fair waiter's successor
        // is woken by the message its leaving publishes).
        if ((w.woken || w.acting_on_release) && w.token.empty()) wake(state, {});
        left(state);
    }
}

void release_wakeups::subscribe(const std::vector<std::string>& channels)
{
    std::weak_ptr<release_wakeups> weak = weak_from_this();
    for (const auto& channel : channels) {
        auto it = channels_.find(channel);
        if (it == channels_.end()) continue;
        auto& state = it->second;
        for (std::size_t i = 0; i < state.nodes.size(); ++i) {
            if (state.nodes[i] != node_state::none) continue;
            state.nodes[i] = node_state::subscribing;
            state.asked[i] = true;
            auto diag = std::make_shared<diagnostics>();
            auto done = asio::bind_executor(nodes_->strand(),
                                            [weak, channel, generation = state.generation, i, diag](error_code ec) {
                                                if (auto self = weak.lock())
                                                    self->on_subscribed(channel, generation, i, ec, *diag);
                                            });
            try {
                nodes_->at(i).async_subscribe({channel}, *diag, std::move(done));
            } catch (...) {
                state.nodes[i] = node_state::none;  // a node that throws counts as down
            }
        }
    }
}

void release_wakeups::on_subscribed(const std::string& channel, std::uint64_t generation, std::size_t node,
                                    error_code ec, const diagnostics& diag)
{
    auto it = channels_.find(channel);
    if (it == channels_.end() || it->second.generation != generation) return;  // unsubscribed meanwhile
    auto& state = it->second;
    if (!ec) {
        state.nodes[node] = node_state::confirmed;
    } else if (ec == error::server_error) {
        state.nodes[node] = node_state::refused;
        if (refusal_.empty()) {
            refusal_ = "node " + names_[node] + " refused the subscription to release messages (" +
                       std::string(diag.message()) +
                       "): waiters retry at the holder's remaining TTL instead of waking on a release";
            if (log_) log_(log_level::warning, refusal_);
        }
    } else {
        state.nodes[node] = node_state::none;  // down or slow: the next refused waiter asks again
    }
    for (auto* w : state.watchers)
        if (w->settling) w->timer.cancel();
    for (auto* o : state.observers)
        if (o->settling) o->timer.cancel();
}

bool release_wakeups::reliable(const std::vector<std::string>& channels) const
{
    for (const auto& channel : channels) {
        auto it = channels_.find(channel);
        if (it == channels_.end()) return false;
        if (static_cast<std::size_t>(
                std::count(it->second.nodes.begin(), it->second.nodes.end(), node_state::confirmed)) < need_)
            return false;
    }
    return true;
}

bool release_wakeups::settled(const std::vector<std::string>& channels) const
{
    for (const auto& channel : channels) {
        auto it = channels_.find(channel);
        if (it != channels_.end() && std::find(it->second.nodes.begin(), it->second.nodes.end(),
                                               node_state::subscribing) != it->second.nodes.end())
            return false;
    }
    return true;
}

bool release_wakeups::quorum_freed(const release_watcher& w) const
{
    return static_cast<std::size_t>(std::count(w.freed.begin(), w.freed.end(), true)) >= quorum_;
}

void release_wakeups::on_message(const std::string& channel, const std::string& payload, std::size_t node)
{
    auto it = channels_.find(channel);
    if (it == channels_.end()) return;
    auto& state = it->second;
    for (auto* w : state.watchers)
        if (node < w->freed.size()) w->freed[node] = true;
    const auto newline = payload.find('\n');
    const auto next_in_line =
        newline == std::string::npos ? std::string_view{} : std::string_view(payload).substr(newline + 1);
    // A failed attempt's clean-up frees a node, not the lock: waking on each would let two waiters that each
    // win a minority wake each other forever while the holder keeps a quorum.
    if (payload.starts_with(clean_up_mark)) return wake_freed(state, next_in_line);
    // Every node's copy: the first may come before the other nodes changed, and an observer that read then would
    // see the old quorum and sleep through the rest.
    wake_observers(state);
    auto& recent = state.recent;
    if (std::find(recent.begin(), recent.end(), payload) != recent.end()) return;  // another node's copy
    if (recent.size() == 8) recent.erase(recent.begin());
    recent.push_back(payload);
    wake(state, next_in_line);
}

void release_wakeups::on_key_news(const std::string& channel, std::size_t node)
{
    auto it = channels_.find(channel);
    if (it != channels_.end()) key_changed(it->second, node);
}

void release_wakeups::on_node_news(std::size_t node)
{
    for (auto& [name, state] : channels_) key_changed(state, node);
}

void release_wakeups::key_changed(channel_state& state, std::size_t node)
{
    for (auto* w : state.watchers)
        if (w->key_news && node < w->freed.size()) w->freed[node] = true;
    wake_observers(state);
    wake_freed(state, {});
}

void release_wakeups::wake_observers(channel_state& state)
{
    for (auto* o : state.observers) {
        o->woken = true;
        if (o->pausing) o->timer.cancel();
    }
}

void release_wakeups::wake_freed(channel_state& state, std::string_view next_in_line)
{
    for (auto* w : state.watchers) {
        if (!w->pausing || w->woken || !quorum_freed(*w)) continue;
        if (!w->token.empty() && w->token != next_in_line) continue;  // a fair lock: the next in line only
        if (w->shared && next_in_line == writers_only) continue;      // a reader would be refused by the marks
        w->woken = true;
        w->timer.cancel();
        return;
    }
}

void release_wakeups::wake(channel_state& state, std::string_view next_in_line)
{
    if (next_in_line.starts_with(permits_mark)) return wake_for_permits(state, next_in_line.substr(1));
    if (next_in_line == writers_only) return wake_writer(state);
    if (!next_in_line.empty()) {  // a fair lock's release: only the next in line can take it
        for (auto* w : state.watchers) {
            if (w->token != next_in_line) continue;
            w->woken = true;
            if (w->pausing) w->timer.cancel();
        }
        return;
    }
    for (auto* w : state.watchers) {
        if (w->token.empty() && w->pausing && !w->woken) {
            w->woken = true;
            w->timer.cancel();
            if (w->channels == 1) return;  // a multi-key waiter may be refused for another key: wake one more
        }
    }
    // Nobody asleep: those busy with an attempt (or queued for one) may have been refused before the release
    // landed; they retry at once rather than sleep through it.
    for (auto* w : state.watchers)
        if (w->token.empty()) w->woken = true;
}

void release_wakeups::wake_for_permits(channel_state& state, std::string_view count)
{
    // One waiter per permit freed: a release of k permits lets up to k waiters in ("*": a larger limit, all).
    std::size_t left = count == "*" ? state.watchers.size() : 0;
    if (count != "*") std::from_chars(count.data(), count.data() + count.size(), left);
    left = std::max<std::size_t>(left, 1);
    bool asleep = false;
    for (auto* w : state.watchers) {
        if (!w->token.empty() || !w->pausing || w->woken) continue;
        asleep = true;
        w->woken = true;
        w->timer.cancel();
        if (--left == 0) return;
    }
    // Permits left over: those busy with an attempt may have been refused before the release landed.
    if (!asleep || left > 0)
        for (auto* w : state.watchers)
            if (w->token.empty()) w->woken = true;
}

void release_wakeups::wake_writer(channel_state& state)
{
    // Readers would be refused by the marks of the writers that wait: the longest waiting of the others goes.
    for (auto* w : state.watchers) {
        if (w->token.empty() && !w->shared && w->pausing && !w->woken) {
            w->woken = true;
            w->timer.cancel();
            return;
        }
    }
    for (auto* w : state.watchers)
        if (w->token.empty() && !w->shared) w->woken = true;
}

void release_wakeups::schedule_sweep()
{
    if (sweep_armed_) return;
    sweep_armed_ = true;
    sweep_.expires_after(linger_);
    sweep_.async_wait([weak = weak_from_this()](error_code ec) {
        if (ec) return;
        // What the sweep uses is this object's own (the node set shared): the client's state may die on another
        // thread while it runs.
        if (auto self = weak.lock()) self->sweep();
    });
}

void release_wakeups::sweep()
{
    sweep_armed_ = false;
    const auto now = clock::now();
    bool idle_left = false;
    for (auto it = channels_.begin(); it != channels_.end();) {
        auto& state = it->second;
        if (!state.watchers.empty() || !state.observers.empty()) {
            ++it;
            continue;
        }
        if (now - state.idle_since < linger_) {
            idle_left = true;
            ++it;
            continue;
        }
        // Every node asked, not only those confirmed: one that timed out may have subscribed after all (and its
        // connection would restore the channel after every reconnect).
        std::vector<std::size_t> subscribed;
        for (std::size_t i = 0; i < state.nodes.size(); ++i)
            if (state.asked[i] && state.nodes[i] != node_state::refused) subscribed.push_back(i);
        if (!subscribed.empty()) {
            nodes_->start(
                {}, {},
                [channel = it->first](node& n, fan_out_state&, std::size_t, node::completion done) {
                    n.async_unsubscribe({channel}, std::move(done));
                },
                answered, nodes_->size(), &subscribed);
        }
        it = channels_.erase(it);
    }
    if (idle_left) schedule_sweep();
}

}  // namespace redlock::detail
