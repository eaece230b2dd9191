#include "cli/common/duration.hpp"

#include <charconv>
#include <cstdint>

namespace redlock::cli {

std::optional<std::chrono::milliseconds> parse_duration(std::string_view text, duration_error* why)
{
    auto fail = [why](duration_error e) -> std::optional<std::chrono::milliseconds> {
        if (why != nullptr) *why = e;
        return std::nullopt;
    };
    std::int64_t number = 0;
    const char* first = text.data();
    const char* last = text.data() + text.size();
    // from_chars accepts a leading '-': refuse it here, a negative duration is never meant.
    if (text.empty() || text.front() < '0' || text.front() > '9') return fail(duration_error::malformed);
    auto [end, ec] = std::from_chars(first, last, number);
    const bool out_of_range = ec == std::errc::result_out_of_range;
    if (ec != std::errc{} && !out_of_range) return fail(duration_error::malformed);
    const std::string_view unit(end, static_cast<std::size_t>(last - end));
    std::int64_t scale = 0;
    if (unit.empty() || unit == "ms")
        scale = 1;
    else if (unit == "s")
        scale = 1000;
    else if (unit == "m")
        scale = 60'000;
    else if (unit == "h")
        scale = 3'600'000;
    else
        return fail(duration_error::malformed);
    // Compared before multiplying: number * scale cannot overflow then.
    if (out_of_range || number > max_duration.count() / scale) return fail(duration_error::too_long);
    return std::chrono::milliseconds(number * scale);
}

std::string format_duration(std::chrono::milliseconds d)
{
    const auto n = d.count();
    if (n != 0 && n % 60'000 == 0) return std::to_string(n / 60'000) + "m";
    if (n != 0 && n % 1000 == 0) return std::to_string(n / 1000) + "s";
    return std::to_string(n) + "ms";
}

}  // namespace redlock::cli
