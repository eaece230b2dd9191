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

// The scripts; each one's contract (KEYS, ARGV, reply) heads its file in primitives/rate_limit/.
const script& gcra();            ///< gcra.lua
const script& fixed_window();    ///< fixed_window.lua
const script& sliding_window();  ///< sliding_window.lua

/// The one call of `limit`'s strategy for `cost`, with the node deadline; `limit` must be valid.
request decision_request(const std::string& key, const rate_limit& limit, std::int64_t cost);

/// The sliding window's second key: `{key}:total` (or `key:total` when the key has a hash tag).
std::string log_total_key(const std::string& key);

/// The decision in a script's reply; nullopt for anything else (an error reply, a malformed array).
std::optional<rate_decision> parse_decision(const response& resp);

/// Allowed: yes; limited or never: no; a failure or a reply that is not a decision: error.
vote classify_decision(error_code ec, const response& resp);

}  // namespace redlock::detail::rate_scripts
