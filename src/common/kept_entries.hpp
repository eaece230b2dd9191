// Registries on the lock path (key_watch's leases by key, the attempt gates) keep an entry once it is unused, so that
// the next lock of the same key costs no map node and no key copy; the unused ones go once they outnumber both a
// floor and the entries in use, so that a stream of distinct keys cannot grow the map without bound.
#pragma once

#include <algorithm>
#include <cstddef>

namespace redlock::detail::kept_entries {

/// Unused entries are always kept up to this many.
inline constexpr std::size_t floor = 1024;

/// Whether the unused entries should be swept now.
constexpr bool sweep_due(std::size_t unused, std::size_t in_use) noexcept
{
    return unused > std::max(floor, in_use);
}

}  // namespace redlock::detail::kept_entries
