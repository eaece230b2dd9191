// Waiting without polling: a release is published on the lock's channel and wakes one local waiter.
#pragma once

#include "quorum/node_set.hpp"

#include <redlock/logging.hpp>

#include <boost/asio/steady_timer.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace redlock::detail {

/// One acquire that waits for releases: its pause timer and what the wake-ups know of it. It lives in the
/// acquire loop's frame and stays registered (watch .. unwatch) for the loop's whole life, attempts included,
/// so a release that lands while it is busy is kept for it rather than lost.
struct release_watcher {
    explicit release_watcher(const strand_type& strand) : timer(strand) {}
    boost::asio::steady_timer timer;
    /// A fair waiter's token: only a release that names it as the next in line wakes it. Empty: any release.
    std::string token;
    /// A read-write lock's reader: a release that only writers can pass ("=w") leaves it asleep.
    bool shared = false;
    /// Client tracking's news of its lock keys counts as those nodes freed (on_key_news): a kind whose keys hold one
    /// holder's value, changed only when the holder takes, extends or loses them.
    bool key_news = false;
    bool pausing = false;   ///< waiting on `timer`, which a release cancels
    bool settling = false;  ///< waiting on `timer` for its subscriptions to be confirmed
    bool woken = false;     ///< a release came since its last attempt started
    /// Its attempt in flight follows a release: if that attempt ends without an answer (cancelled, failed), the
    /// release is passed to the next waiter rather than lost with this one.
    bool acting_on_release = false;
    /// Per node: it published a release or a clean-up since this waiter's last attempt began, so the owner it
    /// had is gone there. A refused waiter retries at once when these and the nodes that granted it (cleaned up
    /// since) make a quorum: the other copies of a release that raced its attempt, or a split vote undone.
    std::vector<bool> freed;
    std::size_t channels = 0;  ///< how many channels it watches: a multi-key waiter does not use up a release
};

/// An observer (an election's, which follows its leader): registered with release_wakeups::observe, every copy of
/// every message on its channels wakes it (or, while it reads, marks it woken), and it takes no release from the
/// waiters. Only its timer and the pausing, settling and woken flags are used.
using release_observer = release_watcher;

/// The release id of attempt n's clean-up: a clean-up frees only the nodes it is sent to, so its messages count
/// per node (release_watcher::freed) instead of waking a waiter the way a holder's release does.
std::string clean_up_id(const std::string& token, std::uint64_t n);

/// On the client's strand. Each release wakes one watcher, the longest waiting, once however many nodes
/// publish it: waking them all would make one client's waiters split the nodes' votes among themselves. A
/// release that finds every watcher busy (in an attempt, or queued for one) marks them all woken: the busy one
/// retries at once instead of sleeping through it.
///
/// Subscriptions are the client's, per channel and per node: the first waiter that is refused subscribes, the
/// channel stays subscribed while it has watchers and for a short linger after (a worker that takes the lock
/// again and again subscribes once), then it is unsubscribed. A node that could not be reached is subscribed
/// again by the next waiter refused; one that refused (an ACL user without channel rights) is not asked again.
class release_wakeups : public std::enable_shared_from_this<release_wakeups> {
public:
    /// How long a channel stays subscribed after its last watcher left.
    static constexpr std::chrono::milliseconds linger{2000};

    /// Routes the nodes' messages here. `log` hears the first refused subscription. `linger_for`: `linger`, but for
    /// the tests. Shares `nodes`, and `log` must hold what it uses: a sweep or a subscription's answer runs on
    /// the strand holding only a weak_ptr to this object, and the client's state (which owns it) may die on
    /// another thread meanwhile, the last client, mutex or lease dropped there.
    using logger = std::function<void(log_level, std::string_view)>;
    static std::shared_ptr<release_wakeups> make(std::shared_ptr<node_set> nodes, logger log = {},
                                                 std::chrono::milliseconds linger_for = linger);

    /// Registers `w` on `channels` (no I/O). Unwatch before `w` dies.
    void watch(const std::vector<std::string>& channels, release_watcher& w);
    void unwatch(const std::vector<std::string>& channels, release_watcher& w);
    /// Registers an observer on `channels` (no I/O): each node's copy of each message (but a failed attempt's
    /// clean-up) wakes it, because each copy says that node changed; the waiters are woken as if it were not there.
    /// Unobserve before `o` dies.
    void observe(const std::vector<std::string>& channels, release_observer& o);
    void unobserve(const std::vector<std::string>& channels, release_observer& o);

    /// Sends SUBSCRIBE for `channels` to every node that has not confirmed, refused or been asked already.
    void subscribe(const std::vector<std::string>& channels);
    /// Every channel is confirmed on enough nodes that any quorum's release reaches one of them (N - Q + 1):
    /// a waiter may then sleep until a message or the holder's TTL.
    bool reliable(const std::vector<std::string>& channels) const;
    /// No subscription of `channels` is waiting for its node's answer.
    bool settled(const std::vector<std::string>& channels) const;
    /// `w.freed` counts a quorum of nodes.
    bool quorum_freed(const release_watcher& w) const;

    /// Why waiters fall back to timed retries (a node refused a subscription, e.g. an ACL user without channel
    /// rights), or empty. Said once per client: the first refusal is kept.
    const std::string& refusal() const noexcept { return refusal_; }

    /// A message published on `channel` by `node`: "<release id>" (the same from each of the N nodes); for a
    /// fair lock or semaphore "<release id>\n<token of the next in line>" (a waiter of another process, or none,
    /// leaves ours asleep); for a semaphore "<release id>\n+<k>", k permits freed, which wakes up to k waiters
    /// ("+*": the limit grew, every waiter; a read-write lock's node free of holders and marks); for a read-write
    /// lock "<release id>\n=w": its node is free but writers wait, so only a writer (or a plain lock's waiter) can
    /// pass: one of them wakes.
    void on_message(const std::string& channel, const std::string& payload, std::size_t node);

    /// Client tracking: the lock key of `channel` changed on `node` (its holder's key expired, was deleted or
    /// evicted, or was written: taken, extended). Counts as that node freed for the channel's key_news waiters (a
    /// fair waiter's token keeps it asleep: its turn comes by message or its timer), as a failed
    /// attempt's clean-up does: one wakes once a quorum of nodes changed since its attempt, so a holder that vanished
    /// without a release message is followed at once rather than at its TTL; a holder's extension wakes one waiter
    /// for one attempt, refused. Observers are woken by each.
    void on_key_news(const std::string& channel, std::size_t node);
    /// Client tracking began afresh on `node` (a new session) or the node was flushed: any key there may have
    /// changed, as on_key_news says of every channel.
    void on_node_news(std::size_t node);

private:
    enum class node_state : std::uint8_t { none, subscribing, confirmed, refused };
    struct channel_state {
        std::vector<release_watcher*> watchers;  // registration order: the longest waiting first
        std::vector<release_observer*> observers;
        std::vector<node_state> nodes;
        std::vector<bool> asked;          // per node: a SUBSCRIBE went out (a late confirmation may follow a timeout)
        std::uint64_t generation = 0;     // tells a subscription's late answer from a newer one's
        std::vector<std::string> recent;  // the last releases seen, to drop the other nodes' copies
        std::chrono::steady_clock::time_point idle_since{};  // when its last watcher left
    };

    release_wakeups(std::shared_ptr<node_set> nodes, logger log, std::chrono::milliseconds linger_for)
        : log_(std::move(log)),
          linger_(linger_for),
          nodes_(std::move(nodes)),
          names_(nodes_->names()),
          quorum_(nodes_->majority()),
          need_(nodes_->size() - nodes_->majority() + 1),
          sweep_(nodes_->strand())
    {}
    void on_subscribed(const std::string& channel, std::uint64_t generation, std::size_t node, error_code ec,
                       const diagnostics& diag);
    channel_state& channel(const std::string& name);
    void left(channel_state& state);
    void wake(channel_state& state, std::string_view next_in_line);
    void wake_freed(channel_state& state, std::string_view next_in_line);
    void wake_observers(channel_state& state);
    // Client tracking's news that the channel's key changed on `node` (on_key_news, on_node_news).
    void key_changed(channel_state& state, std::size_t node);
    void wake_for_permits(channel_state& state, std::string_view count);
    void wake_writer(channel_state& state);
    void schedule_sweep();
    void sweep();

    logger log_;
    std::chrono::milliseconds linger_;
    std::shared_ptr<node_set> nodes_;
    std::vector<std::string> names_;
    std::size_t quorum_;
    std::size_t need_;  // confirmed nodes that make a channel reliable
    std::unordered_map<std::string, channel_state> channels_;
    std::uint64_t generations_ = 0;
    boost::asio::steady_timer sweep_;  // unsubscribes channels idle for `linger`
    bool sweep_armed_ = false;
    std::string refusal_;
};

}  // namespace redlock::detail
