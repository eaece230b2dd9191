// How the replies of the plain-command acquire (SET key token NX PX ttl GET, PTTL key) count, without a server.
#include "primitives/mutex/lock_scripts.hpp"

#include <boost/test/unit_test.hpp>

#include <common/resp_values.hpp>

using redlock::detail::vote;
namespace scripts = redlock::detail::lock_scripts;
using redlock::test::bulk;
using redlock::test::error_reply;
using redlock::test::integer;

// {SET's answer, PTTL}: nil granted, a token refused (its PTTL says when to retry), anything else failed.
BOOST_AUTO_TEST_CASE(set_acquire_replies_count_as_votes)
{
    using redlock::resp::value;
    const redlock::response granted{value{}, integer(2000)};
    const redlock::response refused{bulk("their-token"), integer(1500)};
    BOOST_TEST((scripts::classify_set_acquire({}, granted) == vote::yes));
    BOOST_TEST((scripts::classify_set_acquire({}, refused) == vote::no));
    BOOST_TEST(scripts::holder_ttl(refused)->count() == 1500);
    BOOST_TEST(!scripts::holder_ttl(granted));
    BOOST_TEST(!scripts::holder_ttl(redlock::response{bulk("their-token"), integer(-1)}));  // no TTL: no hint
    BOOST_TEST((scripts::classify_set_acquire({}, redlock::response{integer(1), integer(5)}) == vote::error));
    BOOST_TEST((scripts::classify_set_acquire({}, redlock::response{value{}}) == vote::error));  // PTTL missing
    BOOST_TEST((scripts::classify_set_acquire(make_error_code(redlock::error::timeout), granted) == vote::error));
    const redlock::response noperm{error_reply("NOPERM this user has no permissions to run the 'set' command"),
                                   error_reply("NOPERM this user has no permissions to run the 'pttl' command")};
    BOOST_TEST((scripts::classify_set_acquire(make_error_code(redlock::error::server_error), noperm) == vote::error));
    BOOST_TEST(scripts::set_acquire_rejected(noperm));
    BOOST_TEST(!scripts::set_acquire_rejected(
        redlock::response{error_reply("WRONGTYPE Operation against a key"), integer(-1)}));
    BOOST_TEST(!scripts::set_acquire_rejected(refused));
    BOOST_TEST(scripts::set_acquire_rejected(
        redlock::response{error_reply("ERR wrong number of arguments"), integer(-2)}));  // whatever a proxy says
    // A proxy that dropped GET answers OK: it may have set the key, so it is neither a grant nor a refusal.
    const redlock::response ok{redlock::test::scalar(redlock::resp::type::simple_string, "OK"), integer(2000)};
    BOOST_TEST((scripts::classify_set_acquire({}, ok) == vote::error));
    BOOST_TEST(scripts::set_acquire_rejected(ok));
}
