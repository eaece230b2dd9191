// Commands in the wire format, and back through the reader.
#include "resp/reader.hpp"

#include <redlock/resp/serialize.hpp>
#include <redlock/resp/type.hpp>

#include <boost/test/unit_test.hpp>

#include <array>
#include <cstring>
#include <list>
#include <string>
#include <string_view>
#include <vector>

namespace resp = redlock::resp;

BOOST_AUTO_TEST_SUITE(resp_serialize)

BOOST_AUTO_TEST_CASE(initializer_list_command)
{
    std::string out;
    resp::append_command(out, {"SET", "key", "token", "NX", "PX", "30000"});
    BOOST_TEST(out == "*6\r\n$3\r\nSET\r\n$3\r\nkey\r\n$5\r\ntoken\r\n$2\r\nNX\r\n$2\r\nPX\r\n$5\r\n30000\r\n");
}

BOOST_AUTO_TEST_CASE(appends_after_existing_bytes)
{
    std::string out = "*1\r\n$4\r\nPING\r\n";
    resp::append_command(out, {"GET", "k"});
    BOOST_TEST(out == "*1\r\n$4\r\nPING\r\n*2\r\n$3\r\nGET\r\n$1\r\nk\r\n");
}

BOOST_AUTO_TEST_CASE(ranges_of_strings_and_views)
{
    const std::vector<std::string> strings{"DEL", "a", "b"};
    const std::array<std::string_view, 3> views{"DEL", "a", "b"};
    const std::list<const char*> pointers{"DEL", "a", "b"};
    std::string a, b, c;
    resp::append_command(a, strings);
    resp::append_command(b, views);
    resp::append_command(c, pointers);
    BOOST_TEST(a == "*3\r\n$3\r\nDEL\r\n$1\r\na\r\n$1\r\nb\r\n");
    BOOST_TEST(b == a);
    BOOST_TEST(c == a);
}

BOOST_AUTO_TEST_CASE(empty_and_binary_arguments)
{
    std::string out;
    const std::string binary("a\r\n\0b", 5);
    resp::append_command(out, {"SET", "", binary});
    BOOST_TEST(out == std::string("*3\r\n$3\r\nSET\r\n$0\r\n\r\n$5\r\na\r\n\0b\r\n", 30));
    std::string none;
    resp::append_command(none, std::vector<std::string>{});
    BOOST_TEST(none == "*0\r\n");
}

BOOST_AUTO_TEST_CASE(round_trips_through_the_reader)
{
    const std::vector<std::string> args{"EVALSHA", std::string(1000, 's'), "1", "{lock}", std::string("\0\r\n", 3)};
    std::string out;
    resp::append_command(out, args);
    resp::reader r;
    const auto space = r.prepare(out.size());
    std::memcpy(space.data(), out.data(), out.size());
    r.commit(out.size());
    boost::system::error_code ec;
    const auto v = r.next(ec);
    BOOST_REQUIRE(v);
    BOOST_TEST((v->data_type == resp::type::array));
    BOOST_REQUIRE(v->elements.size() == args.size());
    for (std::size_t i = 0; i < args.size(); ++i) {
        BOOST_TEST((v->elements[i].data_type == resp::type::bulk_string));
        BOOST_TEST(v->elements[i].text == args[i]);
    }
}

BOOST_AUTO_TEST_SUITE_END()
