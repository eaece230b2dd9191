// --rate N/PERIOD arguments: "10/s", "100/m", "5000/h", "20000/d", "3/1500ms", "7/10s"; and --strategy.
#pragma once

#include <redlock/rate_limit.hpp>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace redlock::cli {

struct rate_spec {
    std::int64_t count = 0;
    std::chrono::milliseconds period{0};
};

// N (1 to rate_limit::max_rate) per PERIOD: a unit alone (s, m, h, d: one of it) or a DURATION (250ms, 10s, or
// plain milliseconds) from 1 ms to rate_limit::max_period. nullopt for anything else.
std::optional<rate_spec> parse_rate(std::string_view text);

// "10/s", "3/1500ms": the shortest spelling parse_rate reads back.
std::string format_rate(const rate_spec& r);

// --strategy S: "gcra", "fixed-window" or "sliding-window"; nullopt for anything else.
std::optional<rate_strategy> parse_strategy(std::string_view text);

// The strategy as --strategy spells it (the inverse of parse_strategy).
std::string_view strategy_flag_name(rate_strategy s);

}  // namespace redlock::cli
