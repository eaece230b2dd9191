// The cache guard's decisions, without I/O: how long an entry lives (jitter), and what a read does with what it
// found (serve it, serve it and refresh it, or load).
#pragma once

#include "recipes/cache/cache_entry.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <optional>

namespace redlock::detail {

/// `ttl` times a factor uniform in [1 - spread, 1 + spread] (`unit` uniform in [0, 1)), at least 1 ms: entries
/// written together do not expire together (avalanche).
inline std::chrono::milliseconds jittered(std::chrono::milliseconds ttl, double spread, double unit) noexcept
{
    const double factor = 1.0 - spread + 2.0 * spread * unit;
    const auto ms =
        static_cast<std::chrono::milliseconds::rep>(std::llround(static_cast<double>(ttl.count()) * factor));
    return std::chrono::milliseconds(std::max<std::chrono::milliseconds::rep>(ms, 1));
}

/// XFetch (Vattani, Chierichetti, Lowenstein, PVLDB 8(8) 2015): recompute ahead of `expiry` when
/// now - delta * beta * ln(u) >= expiry, `u` uniform in (0, 1]. For a gap g = expiry - now > 0 this happens with
/// probability e^(-g / (beta * delta)): rarely far from the expiry, almost surely close to it, and earlier for a
/// slow recomputation (large delta). beta = 0 never refreshes early.
inline bool xfetch_refresh(std::chrono::system_clock::time_point now, std::chrono::system_clock::time_point expiry,
                           std::chrono::microseconds delta, double beta, double u) noexcept
{
    if (now >= expiry) return true;
    if (beta <= 0 || delta.count() <= 0 || u >= 1.0) return false;
    if (u <= 0) return true;  // ln(0) is -infinity: outside (0, 1], but the limit is "refresh"
    const double early_us = -static_cast<double>(delta.count()) * beta * std::log(u);
    const double gap_us = std::chrono::duration<double, std::micro>(expiry - now).count();
    return early_us >= gap_us;
}

enum class read_action {
    serve,              ///< a hit: return it
    serve_and_refresh,  ///< return it, and refresh it in the background (logical expiry, or XFetch drew early)
    load,               ///< a miss: load it (single flight, rebuild lock)
};

/// What a read does with `entry` (nullopt: nothing stored, or not in our format) at `now`. Null markers are
/// served until the store drops them (no early refresh: they are short-lived and cheap to miss).
inline read_action decide_read(const std::optional<cache_entry>& entry, std::chrono::system_clock::time_point now,
                               double beta, double u) noexcept
{
    if (!entry) return read_action::load;
    if (entry->null) return read_action::serve;
    return xfetch_refresh(now, entry->refresh_at, entry->delta, beta, u) ? read_action::serve_and_refresh
                                                                         : read_action::serve;
}

}  // namespace redlock::detail
