// The semaphore's quorum rule, checked exhaustively in DESIGN.md's terms: with Q = floor(N*L/(L+1)) + 1 grants
// per permit, no L + 1 holders can each hold Q of N nodes while no node counts more than L holders; with one
// grant fewer they can (the rule is as small as it may be); and a plain majority lets L + 1 in for L >= 2.
#include "quorum/tally.hpp"

#include <boost/test/unit_test.hpp>

#include <cstdint>
#include <functional>
#include <vector>

namespace {

using redlock::detail::majority;
using redlock::detail::permit_quorum;

// Every subset of {0..n-1} with exactly q members, as a bit mask.
std::vector<std::uint32_t> subsets_of_size(std::size_t n, std::size_t q)
{
    std::vector<std::uint32_t> out;
    for (std::uint32_t m = 0; m < (1u << n); ++m)
        if (static_cast<std::size_t>(__builtin_popcount(m)) == q) out.push_back(m);
    return out;
}

// Can `holders` holders each hold `q` of `n` nodes while every node counts at most `limit` of them? Tries every
// multiset of node sets (holders may hold the same nodes). More nodes than q never help a holder fit.
bool holders_fit(std::size_t n, std::size_t limit, std::size_t q, std::size_t holders)
{
    if (q == 0) return true;
    if (q > n) return false;
    const auto sets = subsets_of_size(n, q);
    std::vector<std::size_t> load(n, 0);
    std::function<bool(std::size_t, std::size_t)> place = [&](std::size_t from, std::size_t left) -> bool {
        if (left == 0) return true;
        for (std::size_t s = from; s < sets.size(); ++s) {
            bool ok = true;
            for (std::size_t i = 0; i < n; ++i)
                if ((sets[s] >> i & 1u) && load[i] == limit) ok = false;
            if (!ok) continue;
            for (std::size_t i = 0; i < n; ++i) load[i] += sets[s] >> i & 1u;
            const bool found = place(s, left - 1);
            for (std::size_t i = 0; i < n; ++i) load[i] -= sets[s] >> i & 1u;
            if (found) return true;
        }
        return false;
    };
    return place(0, holders);
}

}  // namespace

BOOST_AUTO_TEST_CASE(the_permit_quorum_admits_at_most_limit_holders_and_no_smaller_one_does)
{
    for (std::size_t n = 1; n <= 7; ++n) {
        for (std::size_t limit = 1; limit <= 4; ++limit) {
            const auto q = permit_quorum(n, limit);
            BOOST_TEST_CONTEXT("N = " << n << ", L = " << limit << ", Q = " << q)
            {
                BOOST_TEST(q <= n);
                BOOST_TEST(holders_fit(n, limit, q, limit));  // L holders still fit: the semaphore is usable
                BOOST_TEST(!holders_fit(n, limit, q, limit + 1));
                if (q > 1) BOOST_TEST(holders_fit(n, limit, q - 1, limit + 1));  // one grant fewer is unsafe
                if (limit >= n - 1 || n == 1) BOOST_TEST(q == n);                // and then no node may fail
                if (limit == 1) BOOST_TEST(q == majority(n));
            }
        }
    }
}

BOOST_AUTO_TEST_CASE(a_majority_lets_three_holders_into_a_semaphore_of_two_on_five_nodes)
{
    // {0,1,2}, {2,3,4}, {0,1,3}: each holds 3 of 5, no node counts more than 2 of them.
    BOOST_TEST(holders_fit(5, 2, majority(5), 3));
    BOOST_TEST(!holders_fit(5, 2, permit_quorum(5, 2), 3));
    BOOST_TEST(permit_quorum(5, 2) == 4u);
    // Wherever the majority is below the permit quorum, it admits L + 1 holders (N = 3, L = 2 already).
    std::size_t unsafe = 0;
    for (std::size_t n = 1; n <= 7; ++n) {
        for (std::size_t limit = 1; limit <= 4; ++limit) {
            const bool over = holders_fit(n, limit, majority(n), limit + 1);
            BOOST_TEST(over == (majority(n) < permit_quorum(n, limit)), "N = " << n << ", L = " << limit);
            unsafe += over;
        }
    }
    BOOST_TEST(holders_fit(3, 2, majority(3), 3));
    BOOST_TEST_MESSAGE("a majority admits L + 1 holders in " << unsafe << " of 28 shapes (N <= 7, L <= 4)");
}
