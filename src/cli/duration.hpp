// DURATION arguments: "250ms", "10s", "2m", "1h", or plain milliseconds ("1500").
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

namespace redlock::cli {

// The duration, or nullopt when `text` is not one (empty, negative, fractional, unknown unit, overflow).
std::optional<std::chrono::milliseconds> parse_duration(std::string_view text);

// The shortest exact spelling: 250ms, 10s, 2m.
std::string format_duration(std::chrono::milliseconds d);

}  // namespace redlock::cli
