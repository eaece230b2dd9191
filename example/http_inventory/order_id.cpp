#include "order_id.hpp"

#include <array>
#include <cstdint>
#include <stdexcept>
#include <sys/random.h>

namespace http_inventory {

bool valid_order_id(std::string_view key)
{
    if (key.empty() || key.size() > 128) return false;
    for (const char c : key) {
        const bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
                           c == '-' || c == '.' || c == ':';
        if (!plain) return false;
    }
    return true;
}

std::string new_order_id()
{
    std::array<std::uint8_t, 16> bytes{};
    std::size_t filled = 0;
    while (filled < bytes.size()) {
        const auto n = ::getrandom(bytes.data() + filled, bytes.size() - filled, 0);
        if (n < 0) throw std::runtime_error("getrandom failed");
        filled += static_cast<std::size_t>(n);
    }
    static constexpr char hex[] = "0123456789abcdef";
    std::string id;
    id.reserve(bytes.size() * 2);
    for (const auto b : bytes) {
        id += hex[b >> 4];
        id += hex[b & 15];
    }
    return id;
}

}  // namespace http_inventory
