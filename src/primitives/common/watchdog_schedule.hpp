// When the keeper of a lease wakes up next, and what it does then. Pure, so it is tested without clocks.
#pragma once

#include <chrono>
#include <optional>

namespace redlock::detail {

struct watchdog_plan {
    bool enabled = false;                   ///< extend at all? (otherwise the lease just runs out)
    std::chrono::milliseconds interval{0};  ///< between extensions, counted from the last grant's start
    std::chrono::milliseconds retry{0};     ///< after a failed extension
    std::optional<std::chrono::steady_clock::time_point> stop_extending_at;  ///< maximum total hold time
};

struct watchdog_step {
    enum class action { extend, lose } what;
    std::chrono::steady_clock::time_point at;
};

/// `granted_at`: start of the attempt whose grant is in force; `last_failed`: the last extension failed at `now`.
/// A lease is lost at `valid_until` unless an extension succeeds before; it is never extended past the
/// maximum hold time, nor after its validity.
inline watchdog_step next_watchdog_step(const watchdog_plan& plan, std::chrono::steady_clock::time_point granted_at,
                                        bool last_failed, std::chrono::steady_clock::time_point now,
                                        std::chrono::steady_clock::time_point valid_until) noexcept
{
    using action = watchdog_step::action;
    if (!plan.enabled) return {action::lose, valid_until};
    const auto extend_at = last_failed ? now + plan.retry : granted_at + plan.interval;
    if (plan.stop_extending_at && extend_at >= *plan.stop_extending_at) return {action::lose, valid_until};
    if (extend_at >= valid_until) return {action::lose, valid_until};
    return {action::extend, extend_at};
}

}  // namespace redlock::detail
