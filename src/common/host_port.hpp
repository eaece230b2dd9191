// `host:port` as URLs, seeds, redirects and diagnostics write it: an IPv6 host in brackets (`[::1]:7000`), or bare
// where the port is required (`::1:7000`: the last colon ends the host). Pure.
#pragma once

#include <charconv>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace redlock::detail {

/// `host:port`, an IPv6 host (one with a colon) in brackets.
inline std::string host_port_text(std::string_view host, std::uint16_t port)
{
    const bool ipv6 = host.find(':') != std::string_view::npos;
    std::string out;
    if (ipv6) out += '[';
    out += host;
    if (ipv6) out += ']';
    out += ':';
    out += std::to_string(port);
    return out;
}

/// A port number in 1..65535, all digits; nullopt otherwise.
inline std::optional<std::uint16_t> read_port(std::string_view text)
{
    unsigned long n = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
    if (text.empty() || ec != std::errc{} || end != text.data() + text.size() || n == 0 || n > 65535)
        return std::nullopt;
    return static_cast<std::uint16_t>(n);
}

struct host_port {
    std::string_view host;  ///< without brackets; may be empty (the caller decides what that means)
    std::uint16_t port = 0;
};

/// Reads `host:port`, `[v6]:port` or a bare `v6:port`; nullopt when the port is not in 1..65535 or the brackets are
/// not closed right before its colon.
inline std::optional<host_port> read_host_port(std::string_view text)
{
    host_port out;
    std::string_view port;
    if (text.starts_with('[')) {
        const auto close = text.find(']');
        if (close == std::string_view::npos || close + 1 >= text.size() || text[close + 1] != ':') return std::nullopt;
        out.host = text.substr(1, close - 1);
        port = text.substr(close + 2);
    } else {
        const auto colon = text.rfind(':');
        if (colon == std::string_view::npos) return std::nullopt;
        out.host = text.substr(0, colon);
        port = text.substr(colon + 1);
    }
    auto number = read_port(port);
    if (!number) return std::nullopt;
    out.port = *number;
    return out;
}

}  // namespace redlock::detail
