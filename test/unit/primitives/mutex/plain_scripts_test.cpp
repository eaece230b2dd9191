// How the replies of the plain-command acquire (SET key token NX PX ttl GET, PTTL key) count, without a server.
#include "primitives/mutex/plain_scripts.hpp"

#include <boost/test/unit_test.hpp>

#include <common/fakes/resp_values.hpp>

using redlock::detail::vote;
namespace scripts = redlock::detail::plain_scripts;
using redlock::test::bulk;
using redlock::test::error_reply;
using redlock::test::integer;

// {SET's answer, PTTL}: nil granted, a token refused (its PTTL says when to retry), anything else failed.
BOOST_AUTO_TEST_CASE(set_acquire_replies_count_as_votes)
{
    using redlock::resp::value;
    const redlock::response granted{value{}, integer(2000)};
    const redlock::response refused{bulk("their-token"), integer(1500)};
    BOOST_TEST((scripts::read_acquire({}, granted).verdict == vote::yes));
    BOOST_TEST((scripts::read_acquire({}, refused).verdict == vote::no));
    BOOST_TEST(scripts::read_acquire({}, refused).wait->count() == 1500);
    BOOST_TEST(!scripts::read_acquire({}, granted).wait);
    BOOST_TEST(
        !scripts::read_acquire({}, redlock::response{bulk("their-token"), integer(-1)}).wait);  // no TTL: no hint
    BOOST_TEST((scripts::read_acquire({}, redlock::response{integer(1), integer(5)}).verdict == vote::error));
    BOOST_TEST((scripts::read_acquire({}, redlock::response{value{}}).verdict == vote::error));  // PTTL missing
    BOOST_TEST((scripts::read_acquire(make_error_code(redlock::error::timeout), granted).verdict == vote::error));
    const redlock::response noperm{error_reply("NOPERM this user has no permissions to run the 'set' command"),
                                   error_reply("NOPERM this user has no permissions to run the 'pttl' command")};
    BOOST_TEST((scripts::read_acquire(make_error_code(redlock::error::server_error), noperm).verdict == vote::error));
    BOOST_TEST(scripts::set_acquire_rejected(noperm));
    BOOST_TEST(!scripts::set_acquire_rejected(
        redlock::response{error_reply("WRONGTYPE Operation against a key"), integer(-1)}));
    BOOST_TEST(!scripts::set_acquire_rejected(refused));
    BOOST_TEST(scripts::set_acquire_rejected(
        redlock::response{error_reply("ERR wrong number of arguments"), integer(-2)}));  // whatever a proxy says
    // A proxy that dropped GET answers OK: it may have set the key, so it is neither a grant nor a refusal.
    const redlock::response ok{redlock::test::scalar(redlock::resp::type::simple_string, "OK"), integer(2000)};
    BOOST_TEST((scripts::read_acquire({}, ok).verdict == vote::error));
    BOOST_TEST(scripts::set_acquire_rejected(ok));
}
