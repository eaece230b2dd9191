// The value store's two requests: the read (one GET) and the fenced write of an entry with its TTL.
#pragma once

#include <redlock/error.hpp>
#include <redlock/request.hpp>
#include <redlock/resp/value.hpp>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

namespace redlock::detail {

/// One script call: SET key entry PX ttl, unless the entry stored there carries a higher fencing token than
/// `token` (then nothing is written). Equal tokens pass; a value not in the guard's format is overwritten.
request store_request(const std::string& key, std::uint64_t token, const std::string& entry,
                      std::chrono::milliseconds ttl);

struct store_reply {
    bool written = false;
    std::optional<std::string> newer;  ///< not written: the stored entry, whose token is higher
};

/// Reads the store script's reply: {1} written, {0, entry} refused.
error_code read_store_reply(const resp::value& reply, store_reply& out);

}  // namespace redlock::detail
