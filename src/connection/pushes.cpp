#include "connection/pushes.hpp"

namespace redlock::detail {

void push_handlers::deliver(const resp::value& push) const
{
    if (push_) {
        try {
            push_(push);
        } catch (...) {
        }
    }
    const auto& e = push.elements;
    if (e.empty()) return;
    const std::string_view kind = e[0].text;
    // [invalidate, [key...]], or [invalidate, null] for a FLUSHALL / FLUSHDB.
    if (kind == "invalidate" && e.size() == 2) {
        if (!tracking_) return;
        tracking_news news;
        if (e[1].is_null()) {
            news.all = true;
        } else {
            news.keys.reserve(e[1].elements.size());
            for (const auto& key : e[1].elements) news.keys.push_back(key.text);
        }
        return tracking(news);
    }
    if (!message_) return;
    // RESP3: [message, channel, payload], [smessage, channel, payload], [pmessage, pattern, channel, payload].
    std::size_t channel = 0;
    if ((kind == "message" || kind == "smessage") && e.size() == 3)
        channel = 1;
    else if (kind == "pmessage" && e.size() == 4)
        channel = 2;
    else
        return;
    try {
        message_(e[channel].text, e[channel + 1].text);
    } catch (...) {
    }
}

void push_handlers::lost(std::vector<std::string> channels) const
{
    if (!lost_ || channels.empty()) return;
    try {
        lost_(std::move(channels));
    } catch (...) {
    }
}

void push_handlers::tracking(const tracking_news& news) const
{
    if (!tracking_) return;
    try {
        tracking_(news);
    } catch (...) {
    }
}

}  // namespace redlock::detail
