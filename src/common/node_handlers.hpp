// The handlers a node of many connections (a Cluster's masters, a Sentinel's master after each failover) hands on to
// each of them: set once on the node, read by every connection's callbacks on their own strands.
#pragma once

#include <redlock/connection.hpp>
#include <redlock/node.hpp>

#include <functional>
#include <memory>
#include <mutex>
#include <string_view>

namespace redlock::detail {

class node_handlers : public std::enable_shared_from_this<node_handlers> {
public:
    void set_message_handler(node::message_handler handler)
    {
        auto shared = std::make_shared<const node::message_handler>(std::move(handler));
        std::lock_guard lock(mutex_);
        message_ = std::move(shared);
    }
    void set_tracking_handler(node::tracking_handler handler)
    {
        auto shared = std::make_shared<const node::tracking_handler>(std::move(handler));
        std::lock_guard lock(mutex_);
        tracking_ = std::move(shared);
    }

    /// Sets `conn`'s message and tracking handlers to call this node's, as they are when each push arrives. With
    /// `in_use`, tracking news passes only while it says the connection is the node's (a Sentinel node's candidate
    /// master is not, until ROLE confirmed it: news of its session's start must wait for tell_all).
    void forward_to(connection& conn, std::function<bool()> in_use = {})
    {
        conn.set_message_handler([self = shared_from_this()](std::string_view channel, std::string_view payload) {
            if (auto handler = self->get(self->message_)) (*handler)(channel, payload);
        });
        conn.set_tracking_handler([self = shared_from_this(), in_use = std::move(in_use)](const tracking_news& news) {
            if (in_use && !in_use()) return;
            if (auto handler = self->get(self->tracking_)) (*handler)(news);
        });
    }

    /// Tells the tracking handler that any key may have changed (the node moved to another server).
    void tell_all() const
    {
        tracking_news news;
        news.all = true;
        if (auto handler = get(tracking_)) (*handler)(news);
    }

private:
    template <class Handler>
    std::shared_ptr<const Handler> get(const std::shared_ptr<const Handler>& slot) const
    {
        std::lock_guard lock(mutex_);
        return slot && *slot ? slot : nullptr;
    }

    mutable std::mutex mutex_;
    std::shared_ptr<const node::message_handler> message_;
    std::shared_ptr<const node::tracking_handler> tracking_;
};

}  // namespace redlock::detail
