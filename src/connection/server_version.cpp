#include "connection/server_version.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>

namespace redlock {

std::string_view to_string(server_kind kind) noexcept
{
    switch (kind) {
        case server_kind::redis:
            return "redis";
        case server_kind::valkey:
            return "valkey";
        case server_kind::other:
            return "other";
        case server_kind::unknown:
            break;
    }
    return "unknown";
}

std::string version_text(std::uint32_t version)
{
    if (version == 0) return {};
    return std::to_string(version / 10000) + "." + std::to_string(version / 100 % 100) + "." +
           std::to_string(version % 100);
}

std::string to_string(const server_identity& server)
{
    std::string out(to_string(server.kind));
    if (server.known() && server.version != 0) out += " " + version_text(server.version);
    return out;
}

}  // namespace redlock

namespace redlock::detail {

std::uint32_t parse_server_version(std::string_view text) noexcept
{
    std::uint32_t parts[3] = {0, 0, 0};
    const char* p = text.data();
    const char* end = text.data() + text.size();
    for (std::size_t i = 0; i < 3; ++i) {
        auto [next, ec] = std::from_chars(p, end, parts[i]);
        const std::uint32_t limit = i == 0 ? 40000 : 99;  // minor and patch fit in two digits; no overflow
        if (ec != std::errc{} || parts[i] > limit) return 0;
        p = next;
        if (i < 2) {
            if (p == end || *p != '.') return 0;
            ++p;
        }
    }
    if (p != end) return 0;
    return parts[0] * 10000 + parts[1] * 100 + parts[2];
}

namespace {
bool same_name(std::string_view text, std::string_view name)
{
    return std::equal(text.begin(), text.end(), name.begin(), name.end(),
                      [](char a, char b) { return std::tolower(static_cast<unsigned char>(a)) == b; });
}
}  // namespace

server_identity make_server_identity(std::string_view server, std::string_view version) noexcept
{
    server_identity out;
    out.version = parse_server_version(version);
    if (same_name(server, "redis"))
        out.kind = server_kind::redis;
    else if (same_name(server, "valkey"))
        out.kind = server_kind::valkey;
    else if (!server.empty() || !version.empty())
        out.kind = server_kind::other;
    return out;
}

server_identity server_identity_of_hello(const resp::value& hello) noexcept
{
    if (hello.data_type != resp::type::map) return {};
    std::string_view server, version;
    for (std::size_t i = 0; i + 1 < hello.elements.size(); i += 2) {
        if (hello.elements[i].text == "server") server = hello.elements[i + 1].text;
        if (hello.elements[i].text == "version") version = hello.elements[i + 1].text;
    }
    return make_server_identity(server, version);
}

}  // namespace redlock::detail
