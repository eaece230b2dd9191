#include "recipes/cache/cache_entry.hpp"

#include <charconv>

namespace redlock::detail {

namespace {

constexpr std::string_view magic = "rlc1 ";

void append_number(std::string& out, std::uint64_t n)
{
    char digits[24];
    auto end = std::to_chars(digits, digits + sizeof digits, n).ptr;
    out.append(digits, end);
}

// Reads a decimal number ending at `end_char` from the front of `text` and drops it and the separator.
std::optional<std::uint64_t> take_number(std::string_view& text, char end_char) noexcept
{
    const auto stop = text.find(end_char);
    if (stop == std::string_view::npos || stop == 0 || stop > 20) return std::nullopt;
    if (stop > 1 && text.front() == '0') return std::nullopt;
    std::uint64_t n = 0;
    auto [ptr, ec] = std::from_chars(text.data(), text.data() + stop, n);
    if (ec != std::errc{} || ptr != text.data() + stop || n > std::uint64_t(INT64_MAX)) return std::nullopt;
    text.remove_prefix(stop + 1);
    return n;
}

std::uint64_t unix_ms(cache_entry::time_point t) noexcept
{
    const auto ms = t.time_since_epoch().count();
    return ms > 0 ? static_cast<std::uint64_t>(ms) : 0;
}

}  // namespace

std::string encode_entry(const cache_entry& entry, std::string_view value)
{
    if (entry.null) value = {};
    std::string out;
    out.reserve(magic.size() + 2 + 4 * 21 + value.size());
    out.append(magic).append(entry.null ? "n " : "v ");
    append_number(out, entry.token);
    out.push_back(' ');
    append_number(out, unix_ms(entry.refresh_at));
    out.push_back(' ');
    append_number(out, unix_ms(entry.expires_at));
    out.push_back(' ');
    append_number(out, entry.delta.count() > 0 ? static_cast<std::uint64_t>(entry.delta.count()) : 0);
    out.push_back('\n');
    out.append(value);
    return out;
}

std::optional<cache_entry> decode_entry(std::string_view stored) noexcept
{
    if (!stored.starts_with(magic)) return std::nullopt;
    auto rest = stored.substr(magic.size());
    if (rest.size() < 2 || rest[1] != ' ' || (rest[0] != 'v' && rest[0] != 'n')) return std::nullopt;
    cache_entry e;
    e.null = rest[0] == 'n';
    rest.remove_prefix(2);
    const auto token = take_number(rest, ' ');
    const auto refresh_at = token ? take_number(rest, ' ') : std::nullopt;
    const auto expires_at = refresh_at ? take_number(rest, ' ') : std::nullopt;
    const auto delta = expires_at ? take_number(rest, '\n') : std::nullopt;
    if (!delta || (e.null && !rest.empty())) return std::nullopt;
    // Past the system clock's range (year 2262) a comparison with now would overflow.
    constexpr auto last_ms = static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::duration::max()).count());
    if (*refresh_at > last_ms || *expires_at > last_ms) return std::nullopt;
    e.token = *token;
    e.refresh_at = cache_entry::time_point(std::chrono::milliseconds(static_cast<std::int64_t>(*refresh_at)));
    e.expires_at = cache_entry::time_point(std::chrono::milliseconds(static_cast<std::int64_t>(*expires_at)));
    e.delta = std::chrono::microseconds(static_cast<std::int64_t>(*delta));
    e.value = rest;
    e.header_size = stored.size() - rest.size();
    return e;
}

}  // namespace redlock::detail
