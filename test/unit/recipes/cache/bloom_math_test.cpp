// The Bloom filter's arithmetic: sizes from the textbook formulas, MurmurHash3 as its reference computes it,
// and positions by double hashing.
#include "recipes/cache/bloom_math.hpp"

#include <boost/test/unit_test.hpp>

#include <cmath>
#include <set>
#include <string>

using namespace redlock::detail;

BOOST_AUTO_TEST_CASE(sizes_follow_the_formulas_and_meet_the_rate)
{
    // m = -n ln p / (ln 2)^2: 9.59, 14.38, 19.17 bits per item; k = m / n ln 2: 7, 10, 13.
    struct row {
        double p;
        double bits_per_item;
        std::uint32_t k;
    };
    for (const auto& r : {row{0.01, 9.585, 7}, row{0.001, 14.378, 10}, row{0.0001, 19.170, 13}}) {
        const auto s = size_bloom(100'000, r.p);
        BOOST_REQUIRE(s);
        BOOST_TEST(s->hashes == r.k);
        const double per_item = static_cast<double>(s->bits) / 100'000;
        BOOST_TEST((per_item >= r.bits_per_item && per_item < r.bits_per_item * 1.01), r.p << ": " << per_item);
        BOOST_TEST(bloom_false_positive_rate(*s, 100'000) <= r.p);
    }
}

BOOST_AUTO_TEST_CASE(a_rate_of_one_half_still_hashes)
{
    // Redisson #3898: fpp 0.5 gave a filter that contained everything. Here k >= 1 and the rate holds.
    const auto s = size_bloom(1000, 0.5);
    BOOST_REQUIRE(s);
    BOOST_TEST(s->hashes >= 1u);
    BOOST_TEST(bloom_false_positive_rate(*s, 1000) <= 0.5);
}

BOOST_AUTO_TEST_CASE(impossible_shapes_are_refused)
{
    BOOST_TEST(!size_bloom(0, 0.01));
    BOOST_TEST(!size_bloom(100, 0.0));
    BOOST_TEST(!size_bloom(100, 1.0));
    BOOST_TEST(!size_bloom(100, std::nan("")));
    BOOST_TEST(!size_bloom(1'000'000'000, 1e-9));  // past 2^32 bits
}

BOOST_AUTO_TEST_CASE(murmur3_matches_the_reference)
{
    // SMHasher's verification value for MurmurHash3_x64_128: hash keys {0}, {0, 1}, ... of lengths 0..255 with
    // seed 256 - length, hash the 256 results, read the first 4 bytes little-endian.
    std::string key, hashes;
    for (int i = 0; i < 256; ++i) {
        const auto h = murmur3_x64_128(key, static_cast<std::uint32_t>(256 - i));
        for (auto half : h)
            for (int b = 0; b < 8; ++b) hashes.push_back(static_cast<char>((half >> (8 * b)) & 0xff));
        key.push_back(static_cast<char>(i));
    }
    const auto final_hash = murmur3_x64_128(hashes, 0);
    BOOST_TEST((final_hash[0] & 0xffffffffu) == 0x6384BA69u);
    // Python mmh3.hash128("Hello world") and Go's murmur3.Sum128 agree: bytes 09c01ad2296d65bd b32ceb54cdb5b54a.
    const auto hello = murmur3_x64_128("Hello world");
    BOOST_TEST(hello[0] == 0xbd656d29d21ac009ULL);
    BOOST_TEST(hello[1] == 0x4ab5b5cd54eb2cb3ULL);
}

BOOST_AUTO_TEST_CASE(positions_are_k_steps_of_h2_from_h1)
{
    const bloom_shape shape{958'506, 7};
    std::vector<std::uint64_t> p;
    bloom_positions("user:42", shape, p);
    BOOST_REQUIRE(p.size() == 7u);
    const auto [h1, h2] = murmur3_x64_128("user:42");
    for (std::uint64_t i = 0; i < 7; ++i) {
        BOOST_TEST(p[i] < shape.bits);
        BOOST_TEST(p[i] == (h1 % shape.bits + i * (h2 % shape.bits)) % shape.bits);
    }
    BOOST_TEST(std::set<std::uint64_t>(p.begin(), p.end()).size() == 7u);
}

BOOST_AUTO_TEST_CASE(a_one_bit_filter_sets_bit_zero)
{
    std::vector<std::uint64_t> p;
    bloom_positions("x", bloom_shape{1, 3}, p);
    BOOST_TEST(p == (std::vector<std::uint64_t>{0, 0, 0}));
}
