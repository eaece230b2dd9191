// Fencing tokens: what an acquire does with the counters, and their arithmetic, as pure functions.
#pragma once

#include <charconv>
#include <cstdint>
#include <optional>
#include <string_view>

namespace redlock::detail {

/// What an acquire does with the fence counters (DESIGN.md, "Fencing tokens").
enum class fence_step {
    none,       ///< no fencing, and every extension
    read,       ///< phase 1 over N nodes: the counters as they are, to commit 1 + the highest (phase 2)
    increment,  ///< one node: the token in the acquire's own round trip
};

/// How a script is told the fence step (an ARGV): "none", "read" or "increment".
constexpr const char* fence_step_name(fence_step step) noexcept
{
    switch (step) {
        case fence_step::read:
            return "read";
        case fence_step::increment:
            return "increment";
        case fence_step::none:
            break;
    }
    return "none";
}

/// A fence counter as Redis stores it: decimal digits, no sign, no leading zero, at most 2^63 - 1 (INCR's
/// range). Anything else is nullopt.
inline std::optional<std::uint64_t> parse_fence(std::string_view text) noexcept
{
    if (text.empty() || (text.size() > 1 && text.front() == '0')) return std::nullopt;
    std::uint64_t value = 0;
    const auto* end = text.data() + text.size();
    auto [ptr, ec] = std::from_chars(text.data(), end, value);
    if (ec != std::errc{} || ptr != end || value > std::uint64_t(INT64_MAX)) return std::nullopt;
    return value;
}

/// Phase 1 over N nodes: the token to commit, one above the highest counter among the granting nodes. Those
/// are a quorum, so they meet the commit quorum of every token issued before this attempt began in at least
/// one node, which reports that token or a later one: the result is above every earlier token.
class fence_maximum {
public:
    void add(std::uint64_t counter) noexcept
    {
        if (counter > highest_) highest_ = counter;
    }
    std::uint64_t highest() const noexcept { return highest_; }
    std::uint64_t next() const noexcept { return highest_ + 1; }

private:
    std::uint64_t highest_ = 0;
};

}  // namespace redlock::detail
