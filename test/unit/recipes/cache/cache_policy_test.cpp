// The cache guard's decisions: jittered TTLs spread evenly, XFetch refreshes early at the paper's rate, and
// what a read does with what it found.
#include "recipes/cache/cache_policy.hpp"

#include <boost/test/unit_test.hpp>

#include <cmath>
#include <random>
#include <vector>

using namespace redlock::detail;
using namespace std::chrono_literals;
using system_clock = std::chrono::system_clock;

BOOST_AUTO_TEST_CASE(jitter_stays_within_its_spread)
{
    BOOST_TEST(jittered(60'000ms, 0.1, 0.0).count() == 54'000);
    BOOST_TEST(jittered(60'000ms, 0.1, 0.5).count() == 60'000);
    BOOST_TEST(jittered(60'000ms, 0.1, 0.999999).count() <= 66'000);
    BOOST_TEST(jittered(60'000ms, 0.0, 0.7).count() == 60'000);
    BOOST_TEST(jittered(1ms, 0.9, 0.0).count() == 1);  // never 0: PX 0 is an error
}

BOOST_AUTO_TEST_CASE(a_jittered_ttl_histogram_is_flat_rather_than_clustered)
{
    // 20,000 TTLs of 60 s +- 10% in 20 bins of 600 ms: each bin within 15% of the 1,000 a flat spread gives
    // (5 standard deviations), and every bin used. Without jitter all would be in one bin.
    std::mt19937_64 gen(12);
    std::uniform_real_distribution<double> unit(0.0, 1.0);
    std::vector<int> bins(20, 0);
    constexpr int draws = 20'000;
    for (int i = 0; i < draws; ++i) {
        const auto ttl = jittered(60'000ms, 0.1, unit(gen)).count();
        BOOST_REQUIRE((ttl >= 54'000 && ttl <= 66'000));
        ++bins[std::min<std::size_t>(static_cast<std::size_t>((ttl - 54'000) / 600), 19)];
    }
    for (std::size_t b = 0; b < bins.size(); ++b)
        BOOST_TEST((bins[b] > 850 && bins[b] < 1150), "bin " << b << " holds " << bins[b]);
}

BOOST_AUTO_TEST_CASE(xfetch_refreshes_at_the_expiry_and_never_with_beta_zero)
{
    const auto now = system_clock::now();
    BOOST_TEST(xfetch_refresh(now, now, 1000us, 1.0, 0.5));          // at the expiry
    BOOST_TEST(xfetch_refresh(now + 1s, now, 1000us, 1.0, 0.999));   // past it
    BOOST_TEST(!xfetch_refresh(now, now + 1ms, 1000us, 0.0, 1e-9));  // beta 0: never early
    BOOST_TEST(!xfetch_refresh(now, now + 1ms, 0us, 1.0, 1e-9));     // delta 0: never early
    BOOST_TEST(!xfetch_refresh(now, now + 1ms, 1000us, 1.0, 1.0));   // u = 1: ln u = 0
    // -delta * beta * ln(u) >= gap: with delta 1 ms, beta 1, a gap of 1 ms needs u <= 1/e.
    BOOST_TEST(xfetch_refresh(now, now + 1ms, 1000us, 1.0, 0.3678));
    BOOST_TEST(!xfetch_refresh(now, now + 1ms, 1000us, 1.0, 0.3680));
}

BOOST_AUTO_TEST_CASE(xfetch_early_refresh_rate_matches_the_exponential)
{
    // P(refresh) = e^(-gap / (beta * delta)) for u uniform in (0, 1]. 200,000 seeded trials per point; the
    // tolerance is 5 binomial standard deviations (at most 0.0056).
    std::mt19937_64 gen(2015);
    std::uniform_real_distribution<double> unit(0.0, 1.0);
    const auto expiry = system_clock::time_point(1'700'000'000s);
    constexpr int trials = 200'000;
    for (const double beta : {0.5, 1.0, 2.0}) {
        for (const auto delta : {200us, 5000us}) {
            for (const double gaps : {0.0, 0.25, 1.0, 2.0, 4.0}) {  // the gap in units of beta * delta
                const auto gap = std::chrono::microseconds(
                    static_cast<std::int64_t>(std::llround(gaps * beta * static_cast<double>(delta.count()))));
                const auto now = expiry - gap;
                int refreshed = 0;
                for (int i = 0; i < trials; ++i)
                    refreshed += xfetch_refresh(now, expiry, delta, beta, 1.0 - unit(gen)) ? 1 : 0;
                const double expected =
                    std::exp(-static_cast<double>(gap.count()) / (beta * static_cast<double>(delta.count())));
                const double rate = static_cast<double>(refreshed) / trials;
                const double sigma = std::sqrt(expected * (1 - expected) / trials);
                BOOST_TEST(std::abs(rate - expected) <= 5 * sigma + 1e-9,
                           "beta " << beta << ", delta " << delta.count() << " us, gap " << gaps << " beta*delta: rate "
                                   << rate << ", expected " << expected);
            }
        }
    }
}

BOOST_AUTO_TEST_CASE(a_read_serves_refreshes_or_loads)
{
    const auto now = system_clock::now();
    cache_entry e;
    e.expires_at = std::chrono::time_point_cast<std::chrono::milliseconds>(now + 60s);
    e.refresh_at = std::chrono::time_point_cast<std::chrono::milliseconds>(now + 30s);
    e.delta = 1000us;
    BOOST_TEST((decide_read(std::nullopt, now, 1.0, 0.5) == read_action::load));
    BOOST_TEST((decide_read(e, now, 0.0, 0.5) == read_action::serve));
    BOOST_TEST((decide_read(e, now + 31s, 0.0, 0.5) == read_action::serve_and_refresh));       // logically expired
    BOOST_TEST((decide_read(e, now + 29'999ms, 1.0, 0.1) == read_action::serve_and_refresh));  // XFetch drew early
    auto null_marker = e;
    null_marker.null = true;
    BOOST_TEST((decide_read(null_marker, now + 31s, 1.0, 0.1) == read_action::serve));
}
