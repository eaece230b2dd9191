// The issue order of a Cluster slot across redirects and of a Sentinel master across failovers: requests in flight
// at one server at a time, refused ones back at their place unless a later one ran.
#include "common/issue_lane.hpp"

#include <boost/test/unit_test.hpp>

using lane = redlock::detail::issue_lane<int>;

BOOST_AUTO_TEST_CASE(requests_wait_in_issue_order_and_a_refused_one_goes_back_to_its_place)
{
    lane l;
    l.wait(2, 20);
    l.wait(3, 30);
    l.wait(1, 10);  // refused, issued first: ahead of the later ones
    BOOST_TEST(l.take_front() == 10);
    BOOST_TEST(l.take_front() == 20);
    l.wait(5, 50);
    l.wait(4, 40);
    BOOST_TEST(l.take_front() == 30);
    BOOST_TEST(l.take_front() == 40);
    BOOST_TEST(l.take_front() == 50);
    BOOST_TEST(!l.has_waiting());
}

BOOST_AUTO_TEST_CASE(nothing_goes_to_another_master_while_requests_are_in_flight_at_one)
{
    lane l;
    BOOST_TEST(l.may_send_to("a:1"));
    l.sent_to("a:1");
    l.sent_to("a:1");
    BOOST_TEST(l.may_send_to("a:1"));  // pipelined behind the others, same connection
    BOOST_TEST(!l.may_send_to("b:2"));
    l.answered();
    BOOST_TEST(!l.may_send_to("b:2"));
    l.answered();
    BOOST_TEST(l.may_send_to("b:2"));
    BOOST_TEST(l.idle());
}

BOOST_AUTO_TEST_CASE(a_request_whose_deadline_passed_leaves_the_lane)
{
    lane l;
    l.wait(1, 10);
    l.wait(2, 20);
    BOOST_TEST(l.remove(20));
    BOOST_TEST(!l.remove(30));
    std::vector<int> drained;
    l.drain([&](int op) { drained.push_back(op); });
    BOOST_TEST((drained == std::vector<int>{10}));
    BOOST_TEST(l.idle());
}

BOOST_AUTO_TEST_CASE(a_refused_request_may_go_again_only_while_no_later_one_ran)
{
    lane l;
    BOOST_TEST(!l.later_ran(0));
    l.ran(0);
    BOOST_TEST(!l.later_ran(0));  // itself, or earlier ones: no reordering
    BOOST_TEST(!l.later_ran(1));
    l.ran(3);
    BOOST_TEST(l.later_ran(1));
    BOOST_TEST(l.later_ran(2));  // 2 refused, 3 ran behind it
    BOOST_TEST(!l.later_ran(3));
    BOOST_TEST(!l.later_ran(4));
    l.ran(2);  // an earlier answer does not lower it
    BOOST_TEST(l.later_ran(2));
}
