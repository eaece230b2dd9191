#include "replies.hpp"

#include <charconv>
#include <cstdio>

namespace http_inventory {

namespace http = boost::beast::http;

response reply(http::status status, std::string body, std::string_view content_type)
{
    response res{status, 11};
    res.set(http::field::content_type, content_type);
    res.set(http::field::cache_control, "no-store");
    res.body() = std::move(body);
    res.prepare_payload();
    return res;
}

std::string json_string(std::string_view s)
{
    std::string out = "\"";
    for (const char c : s) {
        switch (c) {
            case '"':
                out += "\\\"";
                break;
            case '\\':
                out += "\\\\";
                break;
            case '\n':
                out += "\\n";
                break;
            default:
                if (static_cast<unsigned char>(c) < 0x20) {
                    char escaped[8];
                    std::snprintf(escaped, sizeof escaped, "\\u%04x", static_cast<unsigned>(c));
                    out += escaped;
                } else {
                    out += c;
                }
        }
    }
    return out + "\"";
}

response error_reply(http::status status, std::string_view code, std::string_view message)
{
    return reply(status, "{\"error\":" + json_string(code) + ",\"message\":" + json_string(message) + "}");
}

std::int64_t seconds_rounded_up(std::chrono::milliseconds d)
{
    return d.count() <= 0 ? 0 : (d.count() + 999) / 1000;
}

void set_rate_limit_headers(response& res, const redlock::rate_decision& d)
{
    res.set("RateLimit-Limit", std::to_string(d.limit));
    res.set("RateLimit-Remaining", std::to_string(d.remaining));
    res.set("RateLimit-Reset", std::to_string(seconds_rounded_up(d.reset_after)));
    // `never` (a cost above the limit) has no retry time; every request here costs 1, below any limit.
    if (d.result == redlock::rate_decision::outcome::limited)
        res.set(http::field::retry_after, std::to_string(std::max<std::int64_t>(1, seconds_rounded_up(d.retry_after))));
}

std::optional<std::int64_t> parse_stock_body(std::string_view body)
{
    auto skip_space = [&] {
        while (!body.empty() &&
               (body.front() == ' ' || body.front() == '\t' || body.front() == '\r' || body.front() == '\n'))
            body.remove_prefix(1);
    };
    auto expect = [&](std::string_view token) {
        skip_space();
        if (!body.starts_with(token)) return false;
        body.remove_prefix(token.size());
        return true;
    };
    if (!expect("{") || !expect("\"stock\"") || !expect(":")) return std::nullopt;
    skip_space();
    std::int64_t stock = 0;
    auto [end, ec] = std::from_chars(body.data(), body.data() + body.size(), stock);
    if (ec != std::errc{} || stock < 0 || stock > 1'000'000'000'000) return std::nullopt;
    body.remove_prefix(static_cast<std::size_t>(end - body.data()));
    if (!expect("}")) return std::nullopt;
    skip_space();
    if (!body.empty()) return std::nullopt;
    return stock;
}

}  // namespace http_inventory
