// Lowercase hex of bytes (tokens, SHA1 digests).
#pragma once

#include <span>
#include <string>

namespace redlock::detail {

inline std::string to_hex(std::span<const unsigned char> bytes)
{
    static constexpr char digits[] = "0123456789abcdef";
    std::string out;
    out.reserve(2 * bytes.size());
    for (unsigned char b : bytes) {
        out.push_back(digits[b >> 4]);
        out.push_back(digits[b & 0x0f]);
    }
    return out;
}

}  // namespace redlock::detail
