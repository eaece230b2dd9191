// The user's handlers of server pushes: the raw push handler sees every push, the message handler the payloads
// of pub/sub messages, the lost handler the channels the server unsubscribed on its own, the tracking handler the
// keys an `invalidate` push names (and the start of each session's tracking). A handler's failure must
// not take the connection down, so what they throw is dropped.
#pragma once

#include <redlock/connection.hpp>
#include <redlock/resp/value.hpp>

#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace redlock::detail {

class push_handlers {
public:
    void set_push_handler(std::function<void(const resp::value&)> handler) { push_ = std::move(handler); }
    void set_message_handler(std::function<void(std::string_view, std::string_view)> handler)
    {
        message_ = std::move(handler);
    }
    void set_lost_handler(std::function<void(std::vector<std::string>)> handler) { lost_ = std::move(handler); }
    void set_tracking_handler(std::function<void(const tracking_news&)> handler) { tracking_ = std::move(handler); }
    bool wants_raw() const noexcept { return static_cast<bool>(push_); }

    /// Hands `push` to the raw handler, then a message's channel and payload to the message handler.
    void deliver(const resp::value& push) const;
    /// Tells the lost handler that the connection no longer holds `channels` (none: no call).
    void lost(std::vector<std::string> channels) const;
    /// Tells the tracking handler `news` (a session's start; invalidations come through deliver).
    void tracking(const tracking_news& news) const;

private:
    std::function<void(const resp::value&)> push_;
    std::function<void(std::string_view, std::string_view)> message_;
    std::function<void(std::vector<std::string>)> lost_;
    std::function<void(const tracking_news&)> tracking_;
};

}  // namespace redlock::detail
