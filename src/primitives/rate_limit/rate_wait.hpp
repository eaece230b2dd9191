// What async_acquire does after each call: done, sleep and ask again, or give up. Pure, so that every case is
// unit-tested without a server.
#pragma once

#include "primitives/common/retry.hpp"

#include <redlock/rate_decision.hpp>

#include <algorithm>
#include <chrono>

namespace redlock::detail {

struct rate_wait_step {
    enum class kind { admitted, pause, give_up };
    kind what = kind::give_up;
    std::chrono::milliseconds pause{0};  ///< kind::pause: how long before asking again
};

/// A failed call is asked again this often until the wait runs out (the node may be restarting).
inline constexpr std::chrono::milliseconds failed_call_retry{100};

/// After a decision, with `left` of the wait (milliseconds::max() when it has no end): sleep the decision's
/// retry_after when the wait covers it; give up at once when it does not (the caller learns now what it
/// would learn at the deadline) and for a cost that is never admitted.
inline rate_wait_step after_decision(const rate_decision& d, std::chrono::milliseconds left) noexcept
{
    using kind = rate_wait_step::kind;
    switch (d.result) {
        case rate_decision::outcome::allowed:
            return {kind::admitted, {}};
        case rate_decision::outcome::never:
            return {kind::give_up, {}};
        case rate_decision::outcome::limited:
            break;
    }
    if (d.retry_after > left) return {kind::give_up, {}};
    return {kind::pause, bounded_pause(d.retry_after)};  // a node's word, bounded before a timer takes it
}

/// After a failed call (no decision), with `left` of the wait: ask again in failed_call_retry, or at the
/// deadline, while some wait is left.
inline rate_wait_step after_failure(std::chrono::milliseconds left) noexcept
{
    if (left <= std::chrono::milliseconds(0)) return {rate_wait_step::kind::give_up, {}};
    return {rate_wait_step::kind::pause, std::min(failed_call_retry, left)};
}

}  // namespace redlock::detail
