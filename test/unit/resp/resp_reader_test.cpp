// The reader: socket bytes in, complete values out, whatever the read sizes.
#include "resp/reader.hpp"
#include "resp_samples.hpp"

#include <redlock/error.hpp>
#include <redlock/resp/error.hpp>

#include <boost/test/unit_test.hpp>

#include <cstring>
#include <ostream>
#include <string>
#include <vector>

namespace resp = redlock::resp;
using resp::type;

namespace {

void feed(resp::reader& r, std::string_view bytes)
{
    const auto space = r.prepare(bytes.size());
    if (!bytes.empty()) std::memcpy(space.data(), bytes.data(), bytes.size());
    r.commit(bytes.size());
}

struct read_result {
    std::vector<resp::value> values;
    boost::system::error_code ec;
};

// Feeds data in chunks of the given sizes (cycled) and collects every value after each chunk.
read_result read_chunked(std::string_view data, const std::vector<std::size_t>& chunks, resp::limits lim = {})
{
    resp::reader r(lim);
    read_result out;
    std::size_t pos = 0;
    for (std::size_t i = 0; pos < data.size() && !out.ec; ++i) {
        const std::size_t n = std::min(chunks[i % chunks.size()], data.size() - pos);
        feed(r, data.substr(pos, n));
        pos += n;
        while (auto v = r.next(out.ec)) out.values.push_back(std::move(*v));
    }
    return out;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(resp_reader)

BOOST_AUTO_TEST_CASE(every_sample_one_byte_at_a_time_gives_its_value)
{
    for (const auto& s : resp::test::samples()) {
        BOOST_TEST_CONTEXT(s.name)
        {
            const auto r = read_chunked(s.bytes, {1});
            BOOST_TEST(!r.ec);
            BOOST_REQUIRE(r.values.size() == 1u);
            BOOST_TEST(r.values[0] == s.expected);
        }
    }
}

BOOST_AUTO_TEST_CASE(every_sample_split_at_every_byte_gives_its_value)
{
    for (const auto& s : resp::test::samples()) {
        for (std::size_t k = 1; k < s.bytes.size(); ++k) {
            BOOST_TEST_CONTEXT(s.name << " split at " << k)
            {
                const auto r = read_chunked(s.bytes, {k, s.bytes.size()});
                BOOST_TEST(!r.ec);
                BOOST_REQUIRE(r.values.size() == 1u);
                BOOST_TEST(r.values[0] == s.expected);
            }
        }
    }
}

BOOST_AUTO_TEST_CASE(pipelined_messages_come_out_in_order_whatever_the_chunking)
{
    std::string all;
    std::vector<resp::value> expected;
    for (const auto& s : resp::test::samples()) {
        all += s.bytes;
        expected.push_back(s.expected);
    }
    for (const auto& chunks : std::vector<std::vector<std::size_t>>{{all.size()}, {1}, {2}, {3, 7}, {64}, {4096}}) {
        BOOST_TEST_CONTEXT("first chunk " << chunks[0])
        {
            const auto r = read_chunked(all, chunks);
            BOOST_TEST(!r.ec);
            BOOST_TEST(r.values == expected, boost::test_tools::per_element());
        }
    }
}

BOOST_AUTO_TEST_CASE(many_small_replies_in_one_read_leave_nothing_buffered)
{
    resp::reader r;
    std::string data;
    for (int i = 0; i < 1000; ++i) data += ":" + std::to_string(i) + "\r\n";
    feed(r, data);
    BOOST_TEST(r.buffered() == data.size());
    boost::system::error_code ec;
    for (int i = 0; i < 1000; ++i) {
        auto v = r.next(ec);
        BOOST_REQUIRE(v);
        BOOST_TEST(v->as_integer().value_or(-1) == i);
    }
    BOOST_TEST(!r.next(ec));
    BOOST_TEST(!ec);
    BOOST_TEST(r.buffered() == 0u);
}

BOOST_AUTO_TEST_CASE(partial_message_stays_buffered_across_compaction)
{
    resp::reader r;
    boost::system::error_code ec;
    // A complete reply, then the start of a second: reading more compacts the buffer under the parser.
    feed(r, "+first\r\n$10\r\n01234");
    auto v = r.next(ec);
    BOOST_REQUIRE(v);
    BOOST_TEST(v->text == "first");
    BOOST_TEST(!r.next(ec));
    BOOST_TEST(!ec);
    BOOST_TEST(r.buffered() == 10u);
    feed(r, "56789\r\n+third\r\n");
    v = r.next(ec);
    BOOST_REQUIRE(v);
    BOOST_TEST(v->text == "0123456789");
    v = r.next(ec);
    BOOST_REQUIRE(v);
    BOOST_TEST(v->text == "third");
    BOOST_TEST(r.buffered() == 0u);
}

BOOST_AUTO_TEST_CASE(commit_may_be_shorter_than_prepare)
{
    resp::reader r;
    auto space = r.prepare(1024);
    BOOST_REQUIRE(space.size() == 1024u);
    std::memcpy(space.data(), "+OK\r\n", 5);
    r.commit(5);
    BOOST_TEST(r.buffered() == 5u);
    boost::system::error_code ec;
    const auto v = r.next(ec);
    BOOST_REQUIRE(v);
    BOOST_TEST(v->text == "OK");
}

BOOST_AUTO_TEST_CASE(one_mebibyte_bulk_one_byte_at_a_time_is_linear)
{
    // Re-parsing from scratch on every byte would take ~10^12 steps here and time out.
    const std::string payload(1024 * 1024, 'x');
    const std::string data = "$" + std::to_string(payload.size()) + "\r\n" + payload + "\r\n";
    const auto r = read_chunked(data, {1});
    BOOST_TEST(!r.ec);
    BOOST_REQUIRE(r.values.size() == 1u);
    BOOST_TEST(r.values[0].text == payload);
}

BOOST_AUTO_TEST_CASE(large_array_one_byte_at_a_time_is_linear)
{
    std::string data = "*100000\r\n";
    for (int i = 0; i < 100000; ++i) data += "+e\r\n";
    const auto r = read_chunked(data, {1});
    BOOST_TEST(!r.ec);
    BOOST_REQUIRE(r.values.size() == 1u);
    BOOST_TEST(r.values[0].elements.size() == 100000u);
}

BOOST_AUTO_TEST_CASE(values_before_an_error_are_delivered_then_the_error_sticks)
{
    resp::reader r;
    feed(r, "+OK\r\n:12x\r\n+never\r\n");
    boost::system::error_code ec;
    auto v = r.next(ec);
    BOOST_REQUIRE(v);
    BOOST_TEST(v->text == "OK");
    BOOST_TEST(!r.next(ec));
    BOOST_TEST(ec == resp::error::invalid_integer);
    BOOST_TEST(ec == redlock::condition::protocol);
    feed(r, "+more\r\n");
    BOOST_TEST(!r.next(ec));
    BOOST_TEST(ec == resp::error::invalid_integer);

    r.reset();
    BOOST_TEST(r.buffered() == 0u);
    feed(r, "+again\r\n");
    v = r.next(ec);
    BOOST_TEST(!ec);
    BOOST_REQUIRE(v);
    BOOST_TEST(v->text == "again");
}

BOOST_AUTO_TEST_CASE(malformed_inputs_fail_one_byte_at_a_time)
{
    struct bad {
        std::string bytes;
        resp::error expected;
    };
    const std::vector<bad> cases{
        {"@\r\n", resp::error::invalid_type},
        {"*2\r\n:1\r\n:x\r\n", resp::error::invalid_integer},
        {"$3\r\nabcd\r\n", resp::error::missing_crlf},
        {"$-3\r\n", resp::error::invalid_length},
        {resp::test::nested_arrays(17, "_\r\n"), resp::error::nesting_too_deep},
        {"$67108865\r\n", resp::error::bulk_too_large},
        {"*1048577\r\n", resp::error::aggregate_too_large},
        {"+" + std::string(70000, 'a'), resp::error::line_too_long},
    };
    for (const auto& c : cases) {
        const auto r = read_chunked(c.bytes, {1});
        BOOST_TEST(r.ec == c.expected, c.bytes.substr(0, 20));
        BOOST_TEST(r.values.empty());
    }
}

BOOST_AUTO_TEST_CASE(limits_reach_the_parser)
{
    resp::limits lim;
    lim.max_bulk_length = 4;
    const auto r = read_chunked("$4\r\nabcd\r\n$5\r\n", {100}, lim);
    BOOST_TEST(r.values.size() == 1u);
    BOOST_TEST(r.ec == resp::error::bulk_too_large);
}

BOOST_AUTO_TEST_CASE(value_accessors)
{
    using namespace resp::test;
    BOOST_TEST(integer_reply("-42").as_integer().value_or(-1) == -42);
    BOOST_TEST(integer_reply("+7").as_integer().value_or(-1) == 7);
    BOOST_TEST(str("123").as_integer().value_or(-1) == 123);
    BOOST_TEST(simple("9223372036854775807").as_integer().value_or(-1) == INT64_MAX);
    BOOST_TEST(!str("12a").as_integer());
    BOOST_TEST(!str("").as_integer());
    BOOST_TEST(!str("+-1").as_integer());
    BOOST_TEST(!str("99999999999999999999").as_integer());
    BOOST_TEST(!scalar(type::double_type, "1").as_integer());
    BOOST_TEST(!scalar(type::null).as_integer());

    const auto err = scalar(type::simple_error, "ERR bad");
    BOOST_TEST(err.is_error());
    BOOST_TEST(err.error_text() == "ERR bad");
    BOOST_TEST(scalar(type::bulk_error, "X").is_error());
    BOOST_TEST(simple("OK").error_text().empty());
    BOOST_TEST(!simple("OK").is_error());
    BOOST_TEST(resp::value{}.is_null());
    BOOST_TEST(aggregate(type::push, {}).is_aggregate());
    BOOST_TEST(!str("x").is_aggregate());
}

BOOST_AUTO_TEST_CASE(to_string_renders_like_redis_cli)
{
    using namespace resp::test;
    BOOST_TEST(resp::to_string(simple("OK")) == "OK");
    BOOST_TEST(resp::to_string(scalar(type::simple_error, "ERR x")) == "(error) ERR x");
    BOOST_TEST(resp::to_string(integer_reply("5")) == "(integer) 5");
    BOOST_TEST(resp::to_string(str("a\"b\r\n\x01")) == R"("a\"b\r\n\x01")");
    BOOST_TEST(resp::to_string(scalar(type::null)) == "(nil)");
    BOOST_TEST(resp::to_string(scalar(type::boolean, "t")) == "(true)");
    BOOST_TEST(resp::to_string(scalar(type::double_type, "1.5")) == "(double) 1.5");
    BOOST_TEST(resp::to_string(scalar(type::big_number, "123")) == "(big number) 123");
    BOOST_TEST(resp::to_string(verbatim("txt", "hi")) == R"((verbatim txt) "hi")");
    BOOST_TEST(resp::to_string(aggregate(type::array, {})) == "(empty array)");
    BOOST_TEST(resp::to_string(aggregate(type::array, {aggregate(type::array, {str("a"), str("b")}), str("c")})) ==
               "1) 1) \"a\"\n   2) \"b\"\n2) \"c\"");
    BOOST_TEST(resp::to_string(aggregate(type::map, {simple("k"), integer_reply("1")})) == "1# k => (integer) 1");
    BOOST_TEST(resp::to_string(aggregate(type::set, {simple("a")})) == "1~ a");
    BOOST_TEST(resp::to_string(aggregate(type::push, {simple("a")})) == "1> a");
    BOOST_TEST(resp::to_string(annotated(simple("OK"), {simple("ttl"), integer_reply("3")})) ==
               "(attribute) 1# ttl => (integer) 3\nOK");
    // Every sample renders (no crash on odd shapes).
    for (const auto& s : samples()) BOOST_TEST((!resp::to_string(s.expected).empty() || s.expected.text.empty()));
}

BOOST_AUTO_TEST_SUITE_END()
