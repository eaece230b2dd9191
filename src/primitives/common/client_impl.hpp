// What a client shares with the primitives made from it: its nodes, the release wake-ups, the attempt gates.
#pragma once

#include "primitives/common/attempt_gate.hpp"
#include "primitives/common/client_counters.hpp"
#include "primitives/common/key_watch.hpp"
#include "primitives/common/lease_keeper.hpp"
#include "primitives/common/release_wakeups.hpp"
#include "quorum/node_set.hpp"

#include <redlock/diagnostics.hpp>
#include <redlock/logging.hpp>

#include <boost/asio/awaitable.hpp>

#include <algorithm>
#include <memory>
#include <mutex>
#include <string_view>
#include <tuple>
#include <vector>

namespace redlock::detail {

/// The client's log handler (client::set_log_handler). Shared with the callbacks that report through it, which
/// may run on the strand while the client's state dies on another thread. Any thread.
class log_sink {
public:
    /// Hands `message` to the handler, if one is set.
    void log(log_level level, std::string_view message) const
    {
        std::shared_ptr<const log_handler> handler;
        {
            std::lock_guard lock(mutex_);
            handler = handler_;
        }
        if (handler && *handler) (*handler)(level, message);
    }
    void set(log_handler handler)
    {
        auto h = std::make_shared<const log_handler>(std::move(handler));
        std::lock_guard lock(mutex_);
        handler_ = std::move(h);
    }

private:
    mutable std::mutex mutex_;
    std::shared_ptr<const log_handler> handler_;
};

/// Whether a node of these asks its server to track keys (node_config::track_keys; a server may still refuse).
inline bool tracks_keys(const std::vector<node_config>& configs)
{
    return std::any_of(configs.begin(), configs.end(), [](const node_config& c) { return c.track_keys; });
}

/// What every handle of a client shares: the client, its mutexes, semaphores, leases and operations hold it by
/// shared_ptr, and the last of them may go on any thread, while the client's strand runs a callback of the
/// wake-ups or the keeper on another. So those callbacks hold what they use (the node set, the log sink) or a
/// weak_ptr to it, never a reference into this object.
class client_impl {
public:
    /// `wakeup_linger`: how long a release channel stays subscribed after its last waiter left (release_wakeups;
    /// shorter only in tests).
    client_impl(const boost::asio::any_io_executor& ex, std::vector<node_config> configs, const node_factory& factory,
                std::chrono::milliseconds wakeup_linger = release_wakeups::linger)
        : nodes_(std::make_shared<node_set>(ex, std::move(configs), factory)),
          log_(std::make_shared<log_sink>()),
          // Weak: a refusal heard once every handle of the client is gone is not reported (no waiter is left to
          // fall back to timers, and the handler's owner may be gone too).
          wakeups_(release_wakeups::make(
              nodes_,
              [sink = std::weak_ptr<const log_sink>(log_)](log_level l, std::string_view m) {
                  if (auto s = sink.lock()) s->log(l, m);
              },
              wakeup_linger)),
          keeper_(std::make_shared<lease_keeper>(nodes_->strand(), tracks_keys(nodes_->configs())
                                                                       ? lease_keeper::max_tracked_batch
                                                                       : lease_keeper::max_batch)),
          key_watch_(key_watch::make(nodes_, wakeups_,
                                     [sink = std::weak_ptr<const log_sink>(log_)](log_level l, std::string_view m) {
                                         if (auto s = sink.lock()) s->log(l, m);
                                     }))
    {}

    node_set& nodes() noexcept { return *nodes_; }
    const node_set& nodes() const noexcept { return *nodes_; }
    strand_type& strand() noexcept { return nodes_->strand(); }
    const boost::asio::any_io_executor& io_executor() const noexcept { return nodes_->io_executor(); }
    release_wakeups& wakeups() noexcept { return *wakeups_; }
    attempt_gates& gates() noexcept { return gates_; }
    lease_keeper& keeper() noexcept { return *keeper_; }
    key_watch& watched_keys() noexcept { return *key_watch_; }
    /// False once a node rejected the plain-command acquire (SET NX GET) that the script acquire replaces:
    /// an ACL without those commands, a proxy. On the strand.
    bool plain_acquire_usable() const noexcept { return plain_acquire_usable_; }
    void reject_plain_acquire() noexcept { plain_acquire_usable_ = false; }

    client_counters& counters() noexcept { return counters_; }
    const client_counters& counters() const noexcept { return counters_; }
    /// Hands `message` to the client's log handler, if one is set (any thread).
    void log(log_level level, std::string_view message) const { log_->log(level, message); }
    void set_log_handler(log_handler handler) { log_->set(std::move(handler)); }

    /// Waits until a quorum of nodes connected, or too many failed for one to; `diag` may be null. Static:
    /// the coroutine owns the client's state, which may otherwise die with the client during the wait.
    static boost::asio::awaitable<std::tuple<error_code>> connect(std::shared_ptr<client_impl> self, diagnostics* diag);

private:
    // Shared with the wake-ups, whose sweep may run after this object died (release_wakeups::make).
    std::shared_ptr<node_set> nodes_;
    std::shared_ptr<log_sink> log_;
    std::shared_ptr<release_wakeups> wakeups_;
    attempt_gates gates_;
    std::shared_ptr<lease_keeper> keeper_;
    std::shared_ptr<key_watch> key_watch_;  // shared with the nodes' tracking handlers (weakly)
    bool plain_acquire_usable_ = true;
    client_counters counters_;
};

}  // namespace redlock::detail
