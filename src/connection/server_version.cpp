#include "connection/server_version.hpp"

#include <charconv>

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

std::uint32_t server_version_of_hello(const resp::value& hello) noexcept
{
    if (hello.data_type != resp::type::map) return 0;
    for (std::size_t i = 0; i + 1 < hello.elements.size(); i += 2) {
        if (hello.elements[i].text == "version") return parse_server_version(hello.elements[i + 1].text);
    }
    return 0;
}

}  // namespace redlock::detail
