// What makes a limiter call invalid, checked before any I/O, and GCRA's parameters in exact integer units.
#pragma once

#include <redlock/rate_limit.hpp>

#include <cstdint>
#include <optional>
#include <string>

namespace redlock::detail {

/// GCRA in integers: time counts in units of 1 / per_us microseconds, chosen so that one cost unit's interval
/// (period / rate) is a whole number of them. Then every sum the script makes is exact (Lua numbers are
/// doubles: integers are exact up to 2^53), and no rounding ever admits a call early.
struct gcra_units {
    std::int64_t per_us = 1;    ///< units per microsecond: rate / gcd(period in us, rate)
    std::int64_t interval = 0;  ///< units per cost unit: period in us / gcd(period in us, rate)
    std::int64_t capacity = 1;  ///< burst + 1 cost units
};

/// Every number the script computes stays below this (with the additions on top still below 2^53).
inline constexpr std::int64_t gcra_exact_limit = std::int64_t{1} << 50;

/// The units of a valid limit; nullopt when capacity x interval or 1000 x per_us exceed gcra_exact_limit.
std::optional<gcra_units> gcra_units_of(const rate_limit& limit);

/// The most one call may take: burst + 1 (GCRA) or the rate (windows). For a limit already checked.
std::int64_t call_limit(const rate_limit& limit) noexcept;

/// Why a call cannot be made (empty when it can): an empty key, a bad limit, a cost <= 0; for a call that waits
/// (`waits`), also a cost above call_limit(), which no wait admits.
std::string invalid_rate_arguments(const std::string& key, const rate_limit& limit, std::int64_t cost, bool waits);

}  // namespace redlock::detail
