// Names of a lock's auxiliary keys and channels: always in the lock key's Redis Cluster hash slot.
#pragma once

#include <string>
#include <string_view>

namespace redlock::detail {

/// True if `name` has a hash tag Redis Cluster would use: the first '{' followed later by '}' with at least
/// one character between them.
inline bool has_hash_tag(std::string_view name) noexcept
{
    const auto open = name.find('{');
    if (open == std::string_view::npos) return false;
    const auto close = name.find('}', open + 1);
    return close != std::string_view::npos && close > open + 1;
}

/// `name:suffix` when the name already has a hash tag, else `{name}:suffix`: either way the same slot as
/// `name` (a tagless name hashes whole, and `{name}` hashes exactly `name`). A tagless name that contains
/// '}' cannot share its slot with any other name; avoid such names on Redis Cluster.
inline std::string aux_name(std::string_view name, std::string_view suffix)
{
    std::string out;
    out.reserve(name.size() + suffix.size() + 3);
    if (has_hash_tag(name)) {
        out.append(name);
    } else {
        out.append("{").append(name).append("}");
    }
    out.append(":").append(suffix);
    return out;
}

}  // namespace redlock::detail
