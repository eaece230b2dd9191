#include "connection/subscriptions.hpp"

namespace redlock::detail {

subscription_tracker::call subscription_tracker::unsubscribe_called(const std::vector<std::string>& channels)
{
    const call c = ++calls_;
    for (const auto& channel : channels) {
        subscribed_.erase(channel);
        forgotten_[channel] = c;
    }
    return c;
}

void subscription_tracker::confirmed(call c, bool subscribe, const std::string& channel)
{
    auto forgotten = forgotten_.find(channel);
    if (subscribe) {
        // Confirmed after a later UNSUBSCRIBE was called: that UNSUBSCRIBE follows it on the wire.
        if (forgotten == forgotten_.end() || forgotten->second < c) subscribed_.insert(channel);
    } else if (forgotten != forgotten_.end() && forgotten->second == c) {
        forgotten_.erase(forgotten);
    }
}

}  // namespace redlock::detail
