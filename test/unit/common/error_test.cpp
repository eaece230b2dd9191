// Error codes map to the conditions callers test.
#include <redlock/error.hpp>
#include <redlock/resp/error.hpp>

#include <boost/asio/error.hpp>
#include <boost/test/unit_test.hpp>

using redlock::condition;
using redlock::error;

// The values are ABI: a program built against an older header compares error_code values with them. New errors go
// at the end; an insertion or a reordering moves exceeds_limit or replica_acks and fails the build here.
static_assert(static_cast<int>(error::invalid_argument) == 1);
static_assert(static_cast<int>(error::exceeds_limit) == 18);
static_assert(static_cast<int>(error::replica_acks) == 19);

BOOST_AUTO_TEST_CASE(library_errors_map_to_conditions)
{
    BOOST_TEST(make_error_code(error::timeout) == condition::timeout);
    BOOST_TEST(make_error_code(error::not_acquired) == condition::not_acquired);
    BOOST_TEST(make_error_code(error::rate_limited) == condition::not_acquired);
    BOOST_TEST(make_error_code(error::exceeds_limit) == condition::not_acquired);
    BOOST_TEST(make_error_code(error::exceeds_limit) != error::not_acquired);  // told apart where it matters
    BOOST_TEST(make_error_code(error::not_connected) == condition::connection);
    BOOST_TEST(make_error_code(error::connection_lost) == condition::connection);
    BOOST_TEST(make_error_code(error::no_quorum) == condition::connection);
    BOOST_TEST(make_error_code(error::protocol_error) == condition::protocol);
    BOOST_TEST(make_error_code(error::server_error) != condition::connection);
    BOOST_TEST(make_error_code(error::invalid_argument) != condition::timeout);
    // Nodes answered and granted: neither a lock held by others nor nodes out of reach.
    BOOST_TEST(make_error_code(error::replica_acks) != condition::not_acquired);
    BOOST_TEST(make_error_code(error::replica_acks) != condition::connection);
}

BOOST_AUTO_TEST_CASE(socket_and_parser_errors_map_to_conditions)
{
    BOOST_TEST(redlock::error_code(boost::asio::error::connection_refused) == condition::connection);
    BOOST_TEST(redlock::error_code(boost::asio::error::eof) == condition::connection);
    BOOST_TEST(redlock::error_code(boost::asio::error::timed_out) == condition::timeout);
    BOOST_TEST(make_error_code(redlock::resp::error::nesting_too_deep) == condition::protocol);
}

BOOST_AUTO_TEST_CASE(every_error_has_a_message_and_the_category_a_name)
{
    BOOST_TEST(std::string(redlock::error_category().name()) == "redlock");
    for (int e = static_cast<int>(error::invalid_argument); e <= static_cast<int>(error::replica_acks); ++e)
        BOOST_TEST(make_error_code(static_cast<error>(e)).message().find("redlock error") == std::string::npos);
}
