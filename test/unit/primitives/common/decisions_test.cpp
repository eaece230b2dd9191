// The pure decide_* functions: every tally outcome, N = 1, 3 and 5, exact error codes and the lease_lost flag.
#include "primitives/common/decisions.hpp"

#include <boost/test/data/monomorphic.hpp>
#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>

namespace {

using namespace redlock;
using redlock::detail::decide_acquire;
using redlock::detail::decide_commit;
using redlock::detail::decide_extend;
using redlock::detail::decide_release;
using redlock::detail::quorum_tally;
using redlock::detail::vote;
using ms = std::chrono::milliseconds;
namespace bdata = boost::unit_test::data;

const std::vector<std::size_t> sizes{1, 3, 5};

quorum_tally tally(std::size_t n, std::size_t yes, std::size_t no, std::size_t errors)
{
    quorum_tally t(n, redlock::detail::majority(n));
    for (std::size_t i = 0; i < yes; ++i) t.add(vote::yes);
    for (std::size_t i = 0; i < no; ++i) t.add(vote::no);
    for (std::size_t i = 0; i < errors; ++i) t.add(vote::error);
    return t;
}
std::size_t quorum_of(std::size_t n)
{
    return redlock::detail::majority(n);
}

const ms plenty{5000};
const ms none{0};

BOOST_DATA_TEST_CASE(acquire_reached_with_validity_left_is_granted, bdata::make(sizes), n)
{
    const auto q = quorum_of(n);
    BOOST_TEST(!decide_acquire(tally(n, q, 0, 0), plenty, none));
    // The others refused or failed: a quorum is a quorum.
    BOOST_TEST(!decide_acquire(tally(n, q, n - q, 0), plenty, ms(100)));
    BOOST_TEST(!decide_acquire(tally(n, q, 0, n - q), plenty, ms(100)));
}

BOOST_DATA_TEST_CASE(acquire_reached_with_validity_below_minimum_is_timeout, bdata::make(sizes), n)
{
    const auto q = quorum_of(n);
    BOOST_TEST(decide_acquire(tally(n, q, 0, 0), ms(100), ms(100)) == error::timeout);  // equal: not above
    BOOST_TEST(decide_acquire(tally(n, q, 0, 0), ms(99), ms(100)) == error::timeout);
    BOOST_TEST(decide_acquire(tally(n, q, 0, 0), ms(0), none) == error::timeout);
    BOOST_TEST(decide_acquire(tally(n, q, 0, 0), ms(-5), none) == error::timeout);  // the validity is over
    BOOST_TEST(!decide_acquire(tally(n, q, 0, 0), ms(101), ms(100)));
}

BOOST_DATA_TEST_CASE(acquire_impossible_by_refusals_is_not_acquired, bdata::make(sizes), n)
{
    const auto q = quorum_of(n);
    const std::size_t too_many = n - q + 1;
    BOOST_TEST(decide_acquire(tally(n, 0, too_many, 0), plenty, none) == error::not_acquired);
    BOOST_TEST(decide_acquire(tally(n, q - 1, n - q + 1, 0), plenty, none) == error::not_acquired);
    // Refusals and errors together, with errors alone not enough: someone else holds it.
    if (n > 1) BOOST_TEST(decide_acquire(tally(n, 0, 1, n - q), plenty, none) == error::not_acquired);
}

BOOST_DATA_TEST_CASE(acquire_impossible_by_errors_is_no_quorum, bdata::make(sizes), n)
{
    const auto q = quorum_of(n);
    BOOST_TEST(decide_acquire(tally(n, 0, 0, n - q + 1), plenty, none) == error::no_quorum);
    BOOST_TEST(decide_acquire(tally(n, 0, 0, n), plenty, none) == error::no_quorum);
    BOOST_TEST(decide_acquire(tally(n, q - 1, 0, n - q + 1), plenty, none) == error::no_quorum);
}

BOOST_DATA_TEST_CASE(commit_pending_and_expired_is_timeout, bdata::make(sizes), n)
{
    const auto q = quorum_of(n);
    BOOST_TEST(decide_commit(tally(n, 0, 0, 0), true, ms(-1), none) == error::timeout);
    BOOST_TEST(decide_commit(tally(n, q - 1, 0, 0), true, ms(-1), none) == error::timeout);
    // Decided before the deadline: as an acquire, even if the deadline is now past.
    BOOST_TEST(decide_commit(tally(n, 0, n - q + 1, 0), true, ms(-1), none) == error::not_acquired);
    BOOST_TEST(decide_commit(tally(n, 0, 0, n - q + 1), true, ms(-1), none) == error::no_quorum);
}

BOOST_DATA_TEST_CASE(commit_decided_as_an_acquire, bdata::make(sizes), n)
{
    const auto q = quorum_of(n);
    BOOST_TEST(!decide_commit(tally(n, q, 0, 0), false, plenty, none));
    BOOST_TEST(decide_commit(tally(n, q, 0, 0), false, ms(10), ms(10)) == error::timeout);
    BOOST_TEST(decide_commit(tally(n, 0, n - q + 1, 0), false, plenty, none) == error::not_acquired);
    BOOST_TEST(decide_commit(tally(n, 0, 0, n - q + 1), false, plenty, none) == error::no_quorum);
    // Reached, even if the deadline passed meanwhile: the validity left decides.
    BOOST_TEST(!decide_commit(tally(n, q, 0, 0), true, plenty, none));
    BOOST_TEST(decide_commit(tally(n, q, 0, 0), true, ms(-1), none) == error::timeout);
}

BOOST_DATA_TEST_CASE(extend_reached_in_time_succeeds, bdata::make(sizes), n)
{
    const auto q = quorum_of(n);
    const auto out = decide_extend(tally(n, q, 0, 0), false, false);
    BOOST_TEST(!out.ec);
    BOOST_TEST(!out.lease_lost);
    const auto mixed = decide_extend(tally(n, q, n - q, 0), false, false);
    BOOST_TEST(!mixed.ec);
    BOOST_TEST(!mixed.lease_lost);
}

BOOST_DATA_TEST_CASE(extend_late_is_lost_whatever_the_nodes_said, bdata::make(sizes), n)
{
    const auto q = quorum_of(n);
    for (auto t : {tally(n, q, 0, 0), tally(n, n, 0, 0), tally(n, 0, n, 0), tally(n, 0, 0, n), tally(n, 0, 0, 0)}) {
        for (bool expired : {false, true}) {
            const auto out = decide_extend(t, expired, true);
            BOOST_TEST(out.ec == error::lost);
            BOOST_TEST(out.lease_lost);
        }
    }
}

BOOST_DATA_TEST_CASE(extend_refused_on_a_quorum_is_not_owner_and_lost, bdata::make(sizes), n)
{
    const auto q = quorum_of(n);
    const auto out = decide_extend(tally(n, 0, n - q + 1, 0), false, false);
    BOOST_TEST(out.ec == error::not_owner);
    BOOST_TEST(out.lease_lost);
    const auto some_yes = decide_extend(tally(n, q - 1, n - q + 1, 0), false, false);
    BOOST_TEST(some_yes.ec == error::not_owner);
    BOOST_TEST(some_yes.lease_lost);
    const auto expired = decide_extend(tally(n, 0, n - q + 1, 0), true, false);  // the refusals still decide
    BOOST_TEST(expired.ec == error::not_owner);
    BOOST_TEST(expired.lease_lost);
}

BOOST_DATA_TEST_CASE(extend_with_too_few_answers_keeps_the_lease, bdata::make(sizes), n)
{
    const auto q = quorum_of(n);
    const auto errors = decide_extend(tally(n, 0, 0, n - q + 1), false, false);
    BOOST_TEST(errors.ec == error::no_quorum);
    BOOST_TEST(!errors.lease_lost);
    if (n > 1) {
        // Refusals below the threshold plus errors: not enough other owners to call it lost.
        const auto mixed = decide_extend(tally(n, 0, n - q, 1), false, false);
        BOOST_TEST(mixed.ec == error::no_quorum);
        BOOST_TEST(!mixed.lease_lost);
    }
    const auto pending_expired = decide_extend(tally(n, q - 1, 0, 0), true, false);
    BOOST_TEST(pending_expired.ec == error::timeout);
    BOOST_TEST(!pending_expired.lease_lost);
    const auto pending = decide_extend(tally(n, 0, 0, 0), false, false);
    BOOST_TEST(pending.ec == error::no_quorum);
    BOOST_TEST(!pending.lease_lost);
}

BOOST_DATA_TEST_CASE(release_outcomes, bdata::make(sizes), n)
{
    const auto q = quorum_of(n);
    BOOST_TEST(!decide_release(tally(n, n, 0, 0), false));
    BOOST_TEST(!decide_release(tally(n, q, n - q, 0), false));
    BOOST_TEST(!decide_release(tally(n, q, 0, n - q), false));
    BOOST_TEST(decide_release(tally(n, 0, n - q + 1, 0), false) == error::not_owner);
    BOOST_TEST(decide_release(tally(n, q - 1, n - q + 1, 0), false) == error::not_owner);
    BOOST_TEST(decide_release(tally(n, 0, 0, n - q + 1), false) == error::no_quorum);
    BOOST_TEST(decide_release(tally(n, q - 1, 0, n - q + 1), false) == error::no_quorum);
    if (n > 1) BOOST_TEST(decide_release(tally(n, q - 1, n - q, 1), false) == error::no_quorum);
    // A lease lost before its release reports the loss, whatever the nodes said.
    BOOST_TEST(decide_release(tally(n, n, 0, 0), true) == error::lost);
    BOOST_TEST(decide_release(tally(n, 0, n, 0), true) == error::lost);
    BOOST_TEST(decide_release(tally(n, 0, 0, n), true) == error::lost);
}

}  // namespace
