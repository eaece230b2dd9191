// The Redis Cluster hash slot of a key: CRC16 (XMODEM) of the key, or of its hash tag, modulo 16384. A script
// may only touch keys of one slot, and a Cluster routes every request by it.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

namespace redlock::detail {

inline constexpr std::uint16_t cluster_slots = 16384;

/// CRC16-CCITT (XMODEM: polynomial 0x1021, initial value 0), as Redis Cluster computes it.
constexpr std::uint16_t crc16(std::string_view bytes) noexcept
{
    std::uint16_t crc = 0;
    for (unsigned char c : bytes) {
        crc = static_cast<std::uint16_t>(crc ^ (c << 8));
        for (int bit = 0; bit < 8; ++bit)
            crc = static_cast<std::uint16_t>(crc & 0x8000 ? (crc << 1) ^ 0x1021 : crc << 1);
    }
    return crc;
}

/// The part of `key` that is hashed: what lies between the first '{' and the first '}' after it, if that is not
/// empty; else the whole key.
constexpr std::string_view hashed_part(std::string_view key) noexcept
{
    const auto open = key.find('{');
    if (open == std::string_view::npos) return key;
    const auto close = key.find('}', open + 1);
    if (close == std::string_view::npos || close == open + 1) return key;
    return key.substr(open + 1, close - open - 1);
}

constexpr std::uint16_t key_slot(std::string_view key) noexcept
{
    return static_cast<std::uint16_t>(crc16(hashed_part(key)) % cluster_slots);
}

}  // namespace redlock::detail
