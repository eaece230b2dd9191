// Which channels a connection keeps and restores after a reconnect, without a server: confirmations in stream
// order, late confirmations of abandoned SUBSCRIBEs, async_unsubscribe forgetting at once, refused restores.
#include "connection/subscriptions.hpp"

#include <boost/test/unit_test.hpp>

#include <string>
#include <vector>

using redlock::detail::subscription_tracker;
using channels = std::vector<std::string>;

BOOST_AUTO_TEST_CASE(confirmed_channels_are_restored_and_pending_ones_are_not)
{
    subscription_tracker t;
    const auto first = t.subscribe_called();
    const auto second = t.subscribe_called();
    t.confirmed(first, true, "b");
    t.confirmed(first, true, "a");
    BOOST_TEST((t.to_restore() == channels{"a", "b"}));
    BOOST_TEST(!t.subscribed("c"));  // `second` still waits for its confirmation
    t.confirmed(second, true, "c");
    BOOST_TEST(t.subscribed("c"));
    BOOST_TEST(t.size() == 3u);
}

BOOST_AUTO_TEST_CASE(a_late_confirmation_of_an_abandoned_subscribe_counts)
{
    subscription_tracker t;
    const auto call = t.subscribe_called();  // its caller timed out; the server still subscribed
    t.confirmed(call, true, "late");
    BOOST_TEST((t.to_restore() == channels{"late"}));
}

BOOST_AUTO_TEST_CASE(unsubscribe_forgets_at_once_before_its_confirmation)
{
    subscription_tracker t;
    t.confirmed(t.subscribe_called(), true, "a");
    t.confirmed(t.subscribe_called(), true, "b");
    t.unsubscribe_called({"a"});
    BOOST_TEST((t.to_restore() == channels{"b"}));
    BOOST_TEST(t.forgotten("a"));
}

BOOST_AUTO_TEST_CASE(a_subscribe_confirmed_after_a_later_unsubscribe_was_called_does_not_come_back)
{
    subscription_tracker t;
    const auto sub = t.subscribe_called();
    const auto unsub = t.unsubscribe_called({"brief"});
    t.confirmed(sub, true, "brief");  // the UNSUBSCRIBE follows it on the wire
    BOOST_TEST(!t.subscribed("brief"));
    t.confirmed(unsub, false, "brief");
    BOOST_TEST(!t.forgotten("brief"));
    BOOST_TEST(t.to_restore().empty());
}

BOOST_AUTO_TEST_CASE(a_subscribe_called_after_the_unsubscribe_counts)
{
    subscription_tracker t;
    const auto unsub = t.unsubscribe_called({"a"});
    const auto sub = t.subscribe_called();
    t.confirmed(unsub, false, "a");
    t.confirmed(sub, true, "a");
    BOOST_TEST(t.subscribed("a"));
    // Even when the unsubscribe's confirmation has not arrived yet: the later call wins.
    subscription_tracker u;
    u.unsubscribe_called({"a"});
    u.confirmed(u.subscribe_called(), true, "a");
    BOOST_TEST(u.subscribed("a"));
}

BOOST_AUTO_TEST_CASE(only_the_latest_unsubscribes_confirmation_ends_forgetting)
{
    subscription_tracker t;
    const auto old_sub = t.subscribe_called();
    const auto u1 = t.unsubscribe_called({"a"});
    const auto u2 = t.unsubscribe_called({"a"});
    t.confirmed(u1, false, "a");
    BOOST_TEST(t.forgotten("a"));
    t.confirmed(old_sub, true, "a");  // still before u2 on the wire
    BOOST_TEST(!t.subscribed("a"));
    t.confirmed(u2, false, "a");
    BOOST_TEST(!t.forgotten("a"));
}

BOOST_AUTO_TEST_CASE(a_lost_connection_ends_every_pending_unsubscribe)
{
    subscription_tracker t;
    t.unsubscribe_called({"a", "b"});
    t.connection_lost();
    BOOST_TEST(!t.forgotten("a"));
    BOOST_TEST(!t.forgotten("b"));
    BOOST_TEST(t.to_restore().empty());  // and nothing comes back
}

BOOST_AUTO_TEST_CASE(a_refused_restore_drops_the_channel_and_keeps_the_others)
{
    subscription_tracker t;
    const auto call = t.subscribe_called();
    for (const auto* ch : {"a", "b", "c"}) t.confirmed(call, true, ch);
    t.restore_refused("b");
    BOOST_TEST((t.to_restore() == channels{"a", "c"}));
}

// A Cluster master whose slot moved away unsubscribes its sharded channels on its own: a kept channel is dropped
// and reported once; one an async_unsubscribe forgot, or never had, is no loss.
BOOST_AUTO_TEST_CASE(the_servers_own_unsubscribe_drops_a_kept_channel_and_reports_it_once)
{
    subscription_tracker t;
    const auto call = t.subscribe_called();
    for (const auto* ch : {"a", "b", "c"}) t.confirmed(call, true, ch);
    BOOST_TEST(t.server_unsubscribed("a"));
    BOOST_TEST(!t.server_unsubscribed("a"));
    BOOST_TEST(!t.server_unsubscribed("never"));
    t.unsubscribe_called({"b"});
    BOOST_TEST(!t.server_unsubscribed("b"));
    BOOST_TEST((t.to_restore() == channels{"c"}));
    BOOST_TEST(t.restore_refused("c"));  // kept until now: its owner hears of it
    BOOST_TEST(!t.restore_refused("c"));
}
