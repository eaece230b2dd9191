// How a cached value is stored: one string, a short text header and the value's bytes, so a hit is one GET.
//
//   rlc1 <kind> <token> <refresh_at_ms> <expires_at_ms> <delta_us>\n<value bytes>
//
// kind: `v` a value, `n` a null marker (the loader found nothing; no bytes follow). token: the fencing token of
// the rebuild lock that wrote it (a write carrying a lower token is refused). refresh_at_ms: Unix time (ms)
// after which a reader serves the value but refreshes it (logical expiry; equal to expires_at_ms without
// one). expires_at_ms: when the store drops it (its PX). delta_us: how long the load took (XFetch's delta).
// Numbers are decimal without leading zeros. Text, so redis-cli shows it and another language reads it.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace redlock::detail {

struct cache_entry {
    using time_point = std::chrono::time_point<std::chrono::system_clock, std::chrono::milliseconds>;

    bool null = false;  ///< a null marker: known not to exist
    std::uint64_t token = 0;
    time_point refresh_at{};
    time_point expires_at{};
    std::chrono::microseconds delta{0};
    std::string_view value;  ///< the bytes after the header (a view into the stored string)
    std::size_t header_size = 0;
};

/// The stored string of an entry with these fields and `value` (ignored for a null marker).
std::string encode_entry(const cache_entry& entry, std::string_view value);

/// The entry in `stored`, or nullopt for anything not in the format above (a foreign or damaged value: the
/// guard treats it as a miss and overwrites it).
std::optional<cache_entry> decode_entry(std::string_view stored) noexcept;

}  // namespace redlock::detail
