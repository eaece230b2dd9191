// The decisions of the Redlock algorithm without I/O: quorum size, tally, validity, retry delay, tokens.
#include "primitives/common/retry.hpp"
#include "primitives/common/token.hpp"
#include "primitives/common/validity.hpp"
#include "quorum/tally.hpp"

#include <boost/test/unit_test.hpp>

#include <set>
#include <sys/wait.h>
#include <unistd.h>

using namespace std::chrono_literals;
using redlock::detail::quorum_tally;
using redlock::detail::vote;
using decision = quorum_tally::decision;

BOOST_AUTO_TEST_CASE(quorum_is_a_strict_majority)
{
    BOOST_TEST(redlock::detail::majority(1) == 1u);
    BOOST_TEST(redlock::detail::majority(2) == 2u);
    BOOST_TEST(redlock::detail::majority(3) == 2u);
    BOOST_TEST(redlock::detail::majority(4) == 3u);
    BOOST_TEST(redlock::detail::majority(5) == 3u);
    BOOST_TEST(redlock::detail::majority(7) == 4u);
}

BOOST_AUTO_TEST_CASE(the_tally_decides_at_the_quorum_without_waiting_for_the_rest)
{
    quorum_tally t(5, 3);
    t.add(vote::yes);
    t.add(vote::error);
    t.add(vote::yes);
    BOOST_TEST((t.decide() == decision::pending));
    t.add(vote::yes);
    BOOST_TEST((t.decide() == decision::reached));  // two nodes never answered: no matter
}

BOOST_AUTO_TEST_CASE(the_tally_gives_up_once_the_quorum_is_out_of_reach)
{
    quorum_tally t(5, 3);
    t.add(vote::no);
    t.add(vote::error);
    BOOST_TEST((t.decide() == decision::pending));
    t.add(vote::no);
    BOOST_TEST((t.decide() == decision::impossible));
    BOOST_TEST(!t.failed_by_errors());  // refusals: not_acquired

    quorum_tally down(5, 3);
    for (int i = 0; i < 3; ++i) down.add(vote::error);
    BOOST_TEST((down.decide() == decision::impossible));
    BOOST_TEST(down.failed_by_errors());  // unreachable: no_quorum
}

BOOST_AUTO_TEST_CASE(every_vote_sequence_decides_consistently)
{
    // Exhaustive over N <= 7: reached iff yes >= Q; impossible iff no + error > N - Q; never both.
    for (std::size_t n = 1; n <= 7; ++n) {
        const auto q = redlock::detail::majority(n);
        for (std::size_t yes = 0; yes <= n; ++yes) {
            for (std::size_t no = 0; yes + no <= n; ++no) {
                for (std::size_t err = 0; yes + no + err <= n; ++err) {
                    quorum_tally t(n, q);
                    for (std::size_t i = 0; i < yes; ++i) t.add(vote::yes);
                    for (std::size_t i = 0; i < no; ++i) t.add(vote::no);
                    for (std::size_t i = 0; i < err; ++i) t.add(vote::error);
                    const auto d = t.decide();
                    if (yes >= q)
                        BOOST_TEST((d == decision::reached));
                    else if (no + err > n - q)
                        BOOST_TEST((d == decision::impossible));
                    else
                        BOOST_TEST((d == decision::pending));
                }
            }
        }
    }
}

BOOST_AUTO_TEST_CASE(validity_is_ttl_minus_elapsed_minus_drift)
{
    using redlock::detail::drift;
    BOOST_TEST(drift(10'000ms, 0.01).count() == 102'000);  // 100 ms + 2 ms, in microseconds
    BOOST_TEST(drift(1'000ms, 0.01).count() == 12'000);
    BOOST_TEST(drift(1'000ms, 0.0).count() == 2'000);
    const auto start = std::chrono::steady_clock::time_point(std::chrono::seconds(1000));
    const auto until = redlock::detail::valid_until(start, 10'000ms, 0.01);
    BOOST_TEST((until - start == std::chrono::microseconds(9'898'000)));
    // An attempt that took 30 ms leaves 10000 - 30 - 102 ms.
    BOOST_TEST((until - (start + 30ms) == std::chrono::microseconds(9'868'000)));
}

BOOST_AUTO_TEST_CASE(the_default_node_timeout_is_short_next_to_the_ttl)
{
    using redlock::detail::default_node_timeout;
    BOOST_TEST(default_node_timeout(10'000ms).count() == 50);
    BOOST_TEST(default_node_timeout(300ms).count() == 30);
    BOOST_TEST(default_node_timeout(5ms).count() == 1);
}

BOOST_AUTO_TEST_CASE(retry_delays_are_jittered_and_capped)
{
    using redlock::detail::retry_delay;
    const auto forever = std::chrono::milliseconds::max();
    BOOST_TEST(retry_delay(100ms, 50ms, std::nullopt, forever, 0.0).count() == 50);
    BOOST_TEST(retry_delay(100ms, 50ms, std::nullopt, forever, 0.5).count() == 100);
    BOOST_TEST(retry_delay(100ms, 50ms, std::nullopt, forever, 0.9999).count() == 150);
    BOOST_TEST(retry_delay(100ms, 200ms, std::nullopt, forever, 0.0).count() == 0);  // never negative
    // The holder's key expires in 7 ms: try again right after that.
    BOOST_TEST(retry_delay(100ms, 50ms, 7ms, forever, 0.9).count() == 8);
    // Never past the caller's wait deadline.
    BOOST_TEST(retry_delay(100ms, 50ms, std::nullopt, 20ms, 0.9).count() == 20);
    // A holder's TTL of ages (a foreign PX 9000000000000000) adds its millisecond without overflow.
    BOOST_TEST(retry_delay(100ms, 50ms, std::chrono::milliseconds::max(), forever, 0.5).count() == 100);
    BOOST_TEST(redlock::detail::bounded_pause(std::chrono::milliseconds::max()) == redlock::detail::longest_pause);
    BOOST_TEST(redlock::detail::bounded_pause(-5ms).count() == 0);
}

BOOST_AUTO_TEST_CASE(tokens_are_128_random_bits_in_hex)
{
    std::set<std::string> seen;
    for (int i = 0; i < 1000; ++i) {
        auto t = redlock::detail::random_token();
        BOOST_TEST(t.size() == 32u);
        BOOST_TEST(t.find_first_not_of("0123456789abcdef") == std::string::npos);
        seen.insert(t);
    }
    BOOST_TEST(seen.size() == 1000u);
}

BOOST_AUTO_TEST_CASE(a_forked_child_never_issues_a_token_of_its_parent)
{
    // Tokens come from a buffer of random bytes: a child forked with a half-used buffer must not hand out the
    // bytes its parent hands out next.
    (void)redlock::detail::random_token();  // the buffer is filled and partly used
    int fds[2];
    BOOST_REQUIRE(::pipe(fds) == 0);
    const pid_t child = ::fork();
    BOOST_REQUIRE(child >= 0);
    if (child == 0) {
        std::string tokens;
        for (int i = 0; i < 8; ++i) tokens += redlock::detail::random_token();
        const auto written = ::write(fds[1], tokens.data(), tokens.size());
        ::_exit(written == static_cast<ssize_t>(tokens.size()) ? 0 : 1);
    }
    ::close(fds[1]);
    std::string from_child(8 * 32, '\0');
    std::size_t got = 0;
    while (got < from_child.size()) {
        const auto n = ::read(fds[0], from_child.data() + got, from_child.size() - got);
        if (n <= 0) break;
        got += static_cast<std::size_t>(n);
    }
    ::close(fds[0]);
    int status = 0;
    ::waitpid(child, &status, 0);
    BOOST_REQUIRE(got == from_child.size());
    std::set<std::string> parent;
    for (int i = 0; i < 8; ++i) parent.insert(redlock::detail::random_token());
    for (int i = 0; i < 8; ++i) BOOST_TEST(parent.count(from_child.substr(static_cast<std::size_t>(i) * 32, 32)) == 0u);
}
