// The pub/sub channels a connection keeps: those the server confirmed to an async_subscribe, which the handshake
// of every reconnect subscribes again. Pure (no I/O): the connection reports what callers asked and what the
// server confirmed, in stream order; which confirmation or error reply is whose is the multiplexer's business
// (and the handshake's, for its own SUBSCRIBEs).
//
// A channel is
// - subscribed: confirmed, restored after a reconnect, until an async_unsubscribe of it, a refused restore, or the
//   server's own unsubscribe (a Cluster master whose slot moved away sends `sunsubscribe` unasked); the last two
//   are the owner's news (connection::set_subscription_lost_handler);
// - forgotten: an async_unsubscribe of it was called and its confirmation has not arrived. A SUBSCRIBE written
//   before that UNSUBSCRIBE may still be confirmed meanwhile (it timed out or was cancelled, but the server did
//   subscribe): that confirmation does not bring the channel back, since the UNSUBSCRIBE follows it on the wire;
// - neither: never confirmed, or a SUBSCRIBE still pending. A pending SUBSCRIBE counts once confirmed, also when
//   its caller gave up; one pending when the connection breaks never counts (its caller got connection_lost).
#pragma once

#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace redlock::detail {

class subscription_tracker {
public:
    /// An async_subscribe or async_unsubscribe call, numbered in the order of the calls (their order on the wire).
    using call = std::uint64_t;

    /// async_subscribe was called: its channels count once the server confirms them.
    call subscribe_called() noexcept { return ++calls_; }
    /// async_unsubscribe was called: its channels are forgotten at once, never restored even if the
    /// UNSUBSCRIBE fails or the connection is down.
    call unsubscribe_called(const std::vector<std::string>& channels);

    /// The server confirmed `channel` to `c` (a [subscribe, channel, n] or [unsubscribe, channel, n] push).
    void confirmed(call c, bool subscribe, const std::string& channel);

    /// The connection broke: no confirmation of an earlier call can arrive any more.
    void connection_lost() noexcept { forgotten_.clear(); }

    /// What the next handshake subscribes again, one SUBSCRIBE each: the subscribed channels, in order.
    std::vector<std::string> to_restore() const { return {subscribed_.begin(), subscribed_.end()}; }
    /// The handshake's SUBSCRIBE of `channel` was refused (the user lost the right to it, a Cluster master no
    /// longer owns its slot): it is no longer kept. True when it was kept until now: the owner should hear of it.
    bool restore_refused(const std::string& channel) { return subscribed_.erase(channel) > 0; }
    /// The server unsubscribed `channel` on its own (a `sunsubscribe` push that answers no SUNSUBSCRIBE of ours): it
    /// is no longer kept. True when it was kept until now; false for a channel an async_unsubscribe forgot already
    /// (then the push is the late answer to it, or the server dropped it first: either way, what the caller asked).
    bool server_unsubscribed(const std::string& channel) { return subscribed_.erase(channel) > 0; }

    bool subscribed(std::string_view channel) const { return subscribed_.find(channel) != subscribed_.end(); }
    bool forgotten(std::string_view channel) const { return forgotten_.find(std::string(channel)) != forgotten_.end(); }
    std::size_t size() const noexcept { return subscribed_.size(); }

private:
    std::set<std::string, std::less<>> subscribed_;
    std::unordered_map<std::string, call> forgotten_;  // channel -> its latest unsubscribe call
    call calls_ = 0;
};

}  // namespace redlock::detail
