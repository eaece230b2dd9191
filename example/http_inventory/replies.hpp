// The service's HTTP answers: JSON bodies, error replies, and the rate-limit headers of a limiter's decision.
#pragma once

#include <redlock/rate_decision.hpp>

#include <boost/beast/http/message.hpp>
#include <boost/beast/http/status.hpp>
#include <boost/beast/http/string_body.hpp>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace http_inventory {

using request = boost::beast::http::request<boost::beast::http::string_body>;
using response = boost::beast::http::response<boost::beast::http::string_body>;

/// A response with `body` as application/json (or `content_type`), its length set.
response reply(boost::beast::http::status status, std::string body, std::string_view content_type = "application/json");

/// `{"error":"<code>","message":"<message>"}`, escaped.
response error_reply(boost::beast::http::status status, std::string_view code, std::string_view message);

/// `s` as a JSON string literal, quotes included.
std::string json_string(std::string_view s);

/// Whole seconds, rounded up, as HTTP's Retry-After and RateLimit-Reset count them (never 0 for a wait > 0).
std::int64_t seconds_rounded_up(std::chrono::milliseconds d);

/// RateLimit-Limit, RateLimit-Remaining and RateLimit-Reset from the decision, and Retry-After when it refused:
/// the limiter's reply maps onto the headers field by field.
void set_rate_limit_headers(response& res, const redlock::rate_decision& d);

/// The stock of a PUT body, `{"stock": N}` with 0 <= N <= 10^12 and nothing else; nullopt otherwise.
std::optional<std::int64_t> parse_stock_body(std::string_view body);

}  // namespace http_inventory
