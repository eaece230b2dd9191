// A Bloom filter's arithmetic, without I/O: its size from the items it must hold and the false-positive rate
// wanted, and the bits an item sets.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace redlock::detail {

struct bloom_shape {
    std::uint64_t bits = 0;    ///< m
    std::uint32_t hashes = 0;  ///< k
};

/// The most bits one Redis string holds (512 MB): SETBIT offsets stay below it.
constexpr std::uint64_t bloom_max_bits = std::uint64_t(1) << 32;

/// The false-positive rate of `shape` holding `items` distinct items: (1 - e^(-k n / m))^k.
double bloom_false_positive_rate(const bloom_shape& shape, std::uint64_t items) noexcept;

/// m = ceil(-n ln p / (ln 2)^2) and k = round(m / n * ln 2) (at least 1), then m grows until the rate above is
/// at most p (rounding k can put it a little over). Nullopt when n is 0, p is not in (0, 1), or m would pass
/// bloom_max_bits.
std::optional<bloom_shape> size_bloom(std::uint64_t items, double false_positive_rate) noexcept;

/// MurmurHash3 x64 128-bit (Austin Appleby's reference, little-endian): {h1, h2}.
std::array<std::uint64_t, 2> murmur3_x64_128(std::string_view data, std::uint32_t seed = 0) noexcept;

/// The k bit positions of `item`, by double hashing (Kirsch and Mitzenmacher): with {h1, h2} its MurmurHash3,
/// position i = (h1 mod m + i * s) mod m for i in [0, k), s = h2 mod m (1 if that is 0).
void bloom_positions(std::string_view item, const bloom_shape& shape, std::vector<std::uint64_t>& out);

}  // namespace redlock::detail
