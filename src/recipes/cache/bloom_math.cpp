#include "recipes/cache/bloom_math.hpp"

#include <cmath>
#include <cstring>
#include <numbers>

namespace redlock::detail {

double bloom_false_positive_rate(const bloom_shape& shape, std::uint64_t items) noexcept
{
    if (shape.bits == 0 || shape.hashes == 0) return 1.0;
    const double k = shape.hashes;
    return std::pow(1.0 - std::exp(-k * static_cast<double>(items) / static_cast<double>(shape.bits)), k);
}

std::optional<bloom_shape> size_bloom(std::uint64_t items, double p) noexcept
{
    if (items == 0 || !(p > 0.0 && p < 1.0)) return std::nullopt;
    const double n = static_cast<double>(items);
    const double ln2 = std::numbers::ln2;
    const double bits = std::ceil(-n * std::log(p) / (ln2 * ln2));
    if (bits > static_cast<double>(bloom_max_bits)) return std::nullopt;
    bloom_shape shape;
    shape.bits = std::max<std::uint64_t>(static_cast<std::uint64_t>(bits), 1);
    shape.hashes = static_cast<std::uint32_t>(std::max(1.0, std::round(static_cast<double>(shape.bits) / n * ln2)));
    // Rounding k may leave the rate a hair above p: add bits (0.1% at a time) until it is not.
    while (bloom_false_positive_rate(shape, items) > p) {
        shape.bits += std::max<std::uint64_t>(shape.bits / 1000, 1);
        if (shape.bits > bloom_max_bits) return std::nullopt;
    }
    return shape;
}

namespace {

constexpr std::uint64_t rotl(std::uint64_t x, int r) noexcept
{
    return (x << r) | (x >> (64 - r));
}

constexpr std::uint64_t fmix(std::uint64_t k) noexcept
{
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdULL;
    k ^= k >> 33;
    k *= 0xc4ceb9fe1a85ec53ULL;
    k ^= k >> 33;
    return k;
}

std::uint64_t load_le(const unsigned char* p) noexcept
{
    std::uint64_t v = 0;
    for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
    return v;
}

}  // namespace

std::array<std::uint64_t, 2> murmur3_x64_128(std::string_view data, std::uint32_t seed) noexcept
{
    constexpr std::uint64_t c1 = 0x87c37b91114253d5ULL;
    constexpr std::uint64_t c2 = 0x4cf5ad432745937fULL;
    const auto* bytes = reinterpret_cast<const unsigned char*>(data.data());
    const std::size_t len = data.size();
    const std::size_t blocks = len / 16;
    std::uint64_t h1 = seed, h2 = seed;

    for (std::size_t i = 0; i < blocks; ++i) {
        std::uint64_t k1 = load_le(bytes + i * 16);
        std::uint64_t k2 = load_le(bytes + i * 16 + 8);
        k1 *= c1;
        k1 = rotl(k1, 31);
        k1 *= c2;
        h1 ^= k1;
        h1 = rotl(h1, 27);
        h1 += h2;
        h1 = h1 * 5 + 0x52dce729;
        k2 *= c2;
        k2 = rotl(k2, 33);
        k2 *= c1;
        h2 ^= k2;
        h2 = rotl(h2, 31);
        h2 += h1;
        h2 = h2 * 5 + 0x38495ab5;
    }

    const unsigned char* tail = bytes + blocks * 16;
    std::uint64_t k1 = 0, k2 = 0;
    const std::size_t rest = len & 15;
    for (std::size_t i = rest; i > 8; --i) k2 ^= std::uint64_t(tail[i - 1]) << ((i - 9) * 8);
    if (rest > 8) {
        k2 *= c2;
        k2 = rotl(k2, 33);
        k2 *= c1;
        h2 ^= k2;
    }
    for (std::size_t i = std::min<std::size_t>(rest, 8); i > 0; --i) k1 ^= std::uint64_t(tail[i - 1]) << ((i - 1) * 8);
    if (rest > 0) {
        k1 *= c1;
        k1 = rotl(k1, 31);
        k1 *= c2;
        h1 ^= k1;
    }

    h1 ^= len;
    h2 ^= len;
    h1 += h2;
    h2 += h1;
    h1 = fmix(h1);
    h2 = fmix(h2);
    h1 += h2;
    h2 += h1;
    return {h1, h2};
}

void bloom_positions(std::string_view item, const bloom_shape& shape, std::vector<std::uint64_t>& out)
{
    const auto [h1, h2] = murmur3_x64_128(item);
    const std::uint64_t m = shape.bits;
    const std::uint64_t first = h1 % m;
    std::uint64_t step = h2 % m;
    if (step == 0) step = 1;
    // m <= 2^32 and i < 2^32: (first + i * step) fits in 64 bits only if reduced as it goes.
    std::uint64_t pos = first;
    for (std::uint32_t i = 0; i < shape.hashes; ++i) {
        out.push_back(pos);
        pos = (pos + step) % m;
    }
}

}  // namespace redlock::detail
