// The plain lock's requests and how their answers read: the acquire (SET NX GET on Redis >= 7.0 and Valkey for a first
// attempt, else a script: primitives/common/acquire.lua, or with fencing primitives/mutex/acquire_*_fence.lua) and
// the release (primitives/mutex/release.lua). Its extensions and fencing commit are a token lease's
// (primitives/common/token_lease.hpp).
#pragma once

#include "primitives/common/fencing.hpp"
#include "primitives/common/lease_protocol.hpp"
#include "primitives/common/lock_kind.hpp"

#include <redlock/error.hpp>
#include <redlock/request.hpp>
#include <redlock/response.hpp>

#include <chrono>
#include <string>
#include <string_view>
#include <vector>

namespace redlock::detail::plain_scripts {

/// The script acquire of `keys` for `token`, with the fence step's script.
request acquire_request(const std::vector<std::string>& keys, const std::string& token, std::chrono::milliseconds ttl,
                        std::chrono::milliseconds node_timeout, fence_step fence = fence_step::none);
/// The acquire of one key without fencing on Redis >= 7.0 and Valkey, at a fraction of a script's server time:
/// `SET key token NX PX ttl GET` then `PTTL key`, pipelined. The SET answers nil when it granted (nobody held
/// the key) and the holder's token when refused; the PTTL then says how long that holder's key lives.
request set_acquire_request(const std::string& key, const std::string& token, std::chrono::milliseconds ttl,
                            std::chrono::milliseconds node_timeout);
/// `release_id`: unique to this release (waiters de-duplicate the N nodes' messages by it).
request release_request(const lease_spec& lease, std::string_view release_id, std::chrono::milliseconds node_timeout);

/// An answer to either acquire. The script: 1 granted, {1, counter} granted with fencing, -(PTTL) or 0 refused.
/// The set acquire: {nil, PTTL} granted, {the holder's token, its PTTL} refused; anything else failed (an OK
/// from a proxy that dropped GET may have set the key: neither a grant nor a refusal).
acquire_answer read_acquire(error_code ec, const response& resp);
/// A set acquire answered with an error other than WRONGTYPE (a server older than 7.0, an ACL user without
/// PTTL, a proxy that rejects the syntax), or with OK (a proxy that dropped GET): the script acquire is the one
/// to trust there.
bool set_acquire_rejected(const response& resp);

}  // namespace redlock::detail::plain_scripts
