#include "primitives/rate_limit/rate_arguments.hpp"

#include <numeric>

namespace redlock::detail {

using ms = std::chrono::milliseconds;

std::optional<gcra_units> gcra_units_of(const rate_limit& limit)
{
    if (limit.rate <= 0 || limit.period <= ms(0) || limit.period > rate_limit::max_period || limit.burst < 0 ||
        limit.burst >= gcra_exact_limit)
        return std::nullopt;
    const std::int64_t period_us = limit.period.count() * 1000;
    const std::int64_t g = std::gcd(period_us, limit.rate);
    gcra_units u{limit.rate / g, period_us / g, limit.burst + 1};
    // Divisions rather than products: the products themselves could overflow.
    if (u.per_us > gcra_exact_limit / 1000) return std::nullopt;
    if (u.capacity > gcra_exact_limit / u.interval) return std::nullopt;
    return u;
}

std::int64_t call_limit(const rate_limit& limit) noexcept
{
    return limit.strategy == rate_strategy::gcra ? limit.burst + 1 : limit.rate;
}

std::string invalid_rate_arguments(const std::string& key, const rate_limit& limit, std::int64_t cost, bool waits)
{
    if (key.empty()) return "the limiter's key is empty";
    if (limit.rate <= 0) return "rate must be positive";
    if (limit.rate > rate_limit::max_rate) return "rate must be at most 10^12 per period (rate_limit::max_rate)";
    if (limit.period <= ms(0)) return "period must be positive";
    if (limit.period > rate_limit::max_period) return "period must be at most 30 days (rate_limit::max_period)";
    if (limit.burst < 0) return "burst must not be negative";
    if (limit.strategy != rate_strategy::gcra && limit.burst != 0)
        return "burst is for GCRA only: a window's burst is its rate";
    if (limit.strategy == rate_strategy::gcra && !gcra_units_of(limit))
        return "burst too large for this rate and period: (burst + 1) x period in microseconds / gcd(period in "
               "microseconds, rate) must be at most 2^50";
    if (limit.wait < ms(0)) return "wait must not be negative";
    if (limit.node_timeout <= ms(0)) return "node_timeout must be positive";
    if (cost <= 0) return "cost must be positive";
    if (waits && cost > call_limit(limit))
        return "cost " + std::to_string(cost) + " is above the limit of one call, " +
               std::to_string(call_limit(limit)) +
               (limit.strategy == rate_strategy::gcra ? " (burst + 1)" : " (the window's rate)") +
               ": no wait can admit it";
    return {};
}

}  // namespace redlock::detail
