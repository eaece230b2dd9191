#include "cli/common/duration.hpp"
#include "cli/common/rate_spec.hpp"

#include <charconv>

namespace redlock::cli {

std::optional<rate_spec> parse_rate(std::string_view text)
{
    const auto slash = text.find('/');
    if (slash == std::string_view::npos || slash == 0) return std::nullopt;
    const auto count_text = text.substr(0, slash);
    const auto period_text = text.substr(slash + 1);
    rate_spec r;
    if (count_text.front() < '0' || count_text.front() > '9') return std::nullopt;  // no sign
    auto [end, ec] = std::from_chars(count_text.data(), count_text.data() + count_text.size(), r.count);
    if (ec != std::errc{} || end != count_text.data() + count_text.size()) return std::nullopt;
    if (r.count < 1 || r.count > rate_limit::max_rate) return std::nullopt;
    if (period_text == "s")
        r.period = std::chrono::seconds(1);
    else if (period_text == "m")
        r.period = std::chrono::minutes(1);
    else if (period_text == "h")
        r.period = std::chrono::hours(1);
    else if (period_text == "d")
        r.period = std::chrono::hours(24);
    else if (auto d = parse_duration(period_text))
        r.period = *d;
    else
        return std::nullopt;
    if (r.period < std::chrono::milliseconds(1) || r.period > rate_limit::max_period) return std::nullopt;
    return r;
}

std::string format_rate(const rate_spec& r)
{
    const auto n = r.period.count();
    const char* unit = n == 1000 ? "s" : n == 60'000 ? "m" : n == 3'600'000 ? "h" : n == 86'400'000 ? "d" : nullptr;
    return std::to_string(r.count) + "/" + (unit ? std::string(unit) : format_duration(r.period));
}

std::optional<rate_strategy> parse_strategy(std::string_view text)
{
    for (auto s : {rate_strategy::gcra, rate_strategy::fixed_window, rate_strategy::sliding_window})
        if (text == strategy_flag_name(s)) return s;
    return std::nullopt;
}

std::string_view strategy_flag_name(rate_strategy s)
{
    switch (s) {
        case rate_strategy::fixed_window:
            return "fixed-window";
        case rate_strategy::sliding_window:
            return "sliding-window";
        case rate_strategy::gcra:
            break;
    }
    return "gcra";
}

}  // namespace redlock::cli
