// Reference computations of the rate limiter's decisions, written the textbook way and independently of the
// scripts: a test feeds each the node's time of a real decision (rate_decision::server_time) and compares
// every field.
#pragma once

#include <redlock/rate_decision.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <deque>
#include <optional>
#include <utility>

namespace redlock::test {

/// GCRA as CL.THROTTLE computes it (redis-cell): a theoretical arrival time (TAT) that each admitted call moves
/// by cost x interval; admitted when TAT + cost x interval - (burst + 1) x interval <= now. Time counts in units
/// of 1/rate microseconds, where the interval (period / rate) is exactly the period in microseconds.
class gcra_model {
public:
    gcra_model(std::int64_t rate, std::chrono::milliseconds period, std::int64_t burst)
        : rate_(rate), interval_(static_cast<__int128>(period.count()) * 1000), burst_(burst)
    {}

    rate_decision decide(std::int64_t now_us, std::int64_t cost)
    {
        const __int128 now = static_cast<__int128>(now_us) * rate_;
        const __int128 tolerance = (burst_ + 1) * interval_;
        const __int128 tat = std::max(tat_.value_or(now), now);
        rate_decision d;
        d.limit = static_cast<std::int64_t>(burst_ + 1);
        d.server_time = std::chrono::microseconds(now_us);
        __int128 ahead = tat - now;  // what the bucket holds, in units
        if (cost > burst_ + 1) {
            d.result = rate_decision::outcome::never;
        } else {
            const __int128 new_tat = tat + cost * interval_;
            const __int128 allow_at = new_tat - tolerance;
            if (now < allow_at) {
                d.result = rate_decision::outcome::limited;
                d.retry_after = ms_up(allow_at - now);
            } else {
                d.result = rate_decision::outcome::allowed;
                tat_ = new_tat;
                ahead = new_tat - now;
            }
        }
        d.remaining = static_cast<std::int64_t>((tolerance - ahead) / interval_);
        d.reset_after = ms_up(ahead);
        return d;
    }

private:
    std::chrono::milliseconds ms_up(__int128 units) const
    {
        const __int128 per_ms = static_cast<__int128>(rate_) * 1000;
        return std::chrono::milliseconds(static_cast<std::int64_t>((units + per_ms - 1) / per_ms));
    }

    __int128 rate_, interval_, burst_;
    std::optional<__int128> tat_;
};

/// The fixed window: at most `rate` units from the first admission of a window until `period` later; a call that
/// finds no open window opens one when admitted. The window's end is kept as the node keeps it, on its millisecond
/// clock (PEXPIRE on the opening call, PTTL on the others), which the model reads as the node's time in
/// microseconds truncated to milliseconds.
class fixed_window_model {
public:
    fixed_window_model(std::int64_t rate, std::chrono::milliseconds period) : rate_(rate), period_ms_(period.count()) {}

    rate_decision decide(std::int64_t now_us, std::int64_t cost)
    {
        const std::int64_t now_ms = now_us / 1000;
        if (window_end_ms_ && now_ms >= *window_end_ms_) {  // the counter expired: the window is over
            window_end_ms_.reset();
            count_ = 0;
        }
        std::int64_t ttl = window_end_ms_ ? *window_end_ms_ - now_ms : 0;
        rate_decision d;
        d.limit = rate_;
        d.server_time = std::chrono::microseconds(now_us);
        if (cost > rate_) {
            d.result = rate_decision::outcome::never;
        } else if (count_ + cost <= rate_) {
            d.result = rate_decision::outcome::allowed;
            if (count_ == 0) {  // the first admission opens the window
                window_end_ms_ = now_ms + period_ms_;
                ttl = period_ms_;
            }
            count_ += cost;
        } else {
            d.result = rate_decision::outcome::limited;
            d.retry_after = std::chrono::milliseconds(std::max<std::int64_t>(ttl, 1));  // the window's end
        }
        d.remaining = std::max<std::int64_t>(rate_ - count_, 0);
        d.reset_after = std::chrono::milliseconds(ttl);
        return d;
    }

private:
    std::int64_t rate_, period_ms_;
    std::int64_t count_ = 0;
    std::optional<std::int64_t> window_end_ms_;
};

/// The sliding-window log: every admitted call with its time; a call is admitted when the calls of the last
/// period (times in (now - period, now]) and its own cost stay within the rate.
class sliding_log_model {
public:
    sliding_log_model(std::int64_t rate, std::chrono::milliseconds period) : rate_(rate), window_(period.count() * 1000)
    {}

    rate_decision decide(std::int64_t now_us, std::int64_t cost)
    {
        while (!log_.empty() && log_.front().first <= now_us - window_) log_.pop_front();
        std::int64_t total = 0;
        for (const auto& entry : log_) total += entry.second;
        rate_decision d;
        d.limit = rate_;
        d.server_time = std::chrono::microseconds(now_us);
        if (cost > rate_) {
            d.result = rate_decision::outcome::never;
        } else if (total + cost <= rate_) {
            d.result = rate_decision::outcome::allowed;
            log_.emplace_back(now_us, cost);
            total += cost;
        } else {
            d.result = rate_decision::outcome::limited;
            std::int64_t freed = 0;
            for (const auto& [time, c] : log_) {
                freed += c;
                if (freed >= total + cost - rate_) {
                    d.retry_after = std::max(ms_up(time + window_ - now_us), std::chrono::milliseconds(1));
                    break;
                }
            }
        }
        d.remaining = std::max<std::int64_t>(rate_ - total, 0);
        d.reset_after = log_.empty() ? std::chrono::milliseconds(0) : ms_up(log_.back().first + window_ - now_us);
        return d;
    }

private:
    static std::chrono::milliseconds ms_up(std::int64_t us) { return std::chrono::milliseconds((us + 999) / 1000); }

    std::int64_t rate_, window_;
    std::deque<std::pair<std::int64_t, std::int64_t>> log_;
};

}  // namespace redlock::test
