// The Lua scripts of the rate limiter, one per strategy, and how their replies read.
#pragma once

#include "quorum/tally.hpp"

#include <redlock/error.hpp>
#include <redlock/rate_decision.hpp>
#include <redlock/rate_limit.hpp>
#include <redlock/request.hpp>
#include <redlock/response.hpp>
#include <redlock/script.hpp>

#include <cstdint>
#include <optional>
#include <string>

namespace redlock::detail::rate_scripts {

// Every script answers {limited (0 or 1), limit, remaining, retry_after ms (-1 unless limited; -1 too when
// limited for good: the cost is above the limit), reset_after ms, the node's TIME in us}: CL.THROTTLE's five
// fields in milliseconds, and the clock they were computed with. Each reads the time from the node (TIME) and
// nothing from the client's clock, and sets a TTL on every key it writes.

/// KEYS: the subject's key, holding its theoretical arrival time (TAT). ARGV: interval, units per us, capacity
/// (burst + 1) and cost, as gcra_units (rate_arguments.hpp). Admits when TAT - now + cost x interval <=
/// capacity x interval, and then moves the TAT by cost x interval.
const script& gcra();

/// KEYS: the window's counter. ARGV: rate, window in ms, cost. Admits when count + cost <= rate: INCRBY, and
/// PEXPIRE when the INCRBY created the counter (in the same script: the expiry is never lost; a counter found
/// without one gets it too). The window starts at its first admission.
const script& fixed_window();

/// KEYS: the log (a sorted set: one member "<sequence>:<cost>" per admitted call, scored by its time in us),
/// and a hash of the log's total cost and member sequence. ARGV: rate, window in us, cost. Drops the calls that
/// left the window (at or before now - window), admits when total + cost <= rate.
const script& sliding_window();

/// The one call of `limit`'s strategy for `cost`, with the node deadline; `limit` must be valid.
request decision_request(const std::string& key, const rate_limit& limit, std::int64_t cost);

/// The sliding window's second key: `{key}:total` (or `key:total` when the key has a hash tag).
std::string log_total_key(const std::string& key);

/// The decision in a script's reply; nullopt for anything else (an error reply, a malformed array).
std::optional<rate_decision> parse_decision(const response& resp);

/// Allowed: yes; limited or never: no; a failure or a reply that is not a decision: error.
vote classify_decision(error_code ec, const response& resp);

}  // namespace redlock::detail::rate_scripts
