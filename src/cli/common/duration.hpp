// DURATION arguments: "250ms", "10s", "2m", "1h", or plain milliseconds ("1500").
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

namespace redlock::cli {

// The longest DURATION accepted: 10 years. Far below where a deadline (now() + duration, in nanoseconds on the
// steady clock) could overflow, in the CLI or in the library.
inline constexpr std::chrono::milliseconds max_duration = std::chrono::hours(24 * 365 * 10);

enum class duration_error { malformed, too_long };

// The duration, or nullopt when `text` is not one (empty, negative, fractional, unknown unit: malformed) or it
// exceeds max_duration (too_long); `why` (optional) says which.
std::optional<std::chrono::milliseconds> parse_duration(std::string_view text, duration_error* why = nullptr);

// The shortest exact spelling: 250ms, 10s, 2m.
std::string format_duration(std::chrono::milliseconds d);

}  // namespace redlock::cli
