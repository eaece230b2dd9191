// The RESP3 pull parser: every type, every split point, malformed input and limits.
#include "resp/parser.hpp"
#include "resp_samples.hpp"

#include <redlock/error.hpp>
#include <redlock/resp/error.hpp>

#include <boost/test/unit_test.hpp>

#include <ostream>
#include <string>
#include <vector>

namespace resp = redlock::resp;
using resp::type;

namespace {

// A node that outlives the parser's input.
struct owned_node {
    type data_type;
    std::size_t aggregate_size;
    std::size_t depth;
    std::string value;
    friend bool operator==(const owned_node&, const owned_node&) = default;
    friend std::ostream& operator<<(std::ostream& os, const owned_node& n)
    {
        return os << resp::to_string(n.data_type) << '/' << n.aggregate_size << '@' << n.depth << " '" << n.value
                  << "'";
    }
};

struct parse_result {
    std::vector<owned_node> nodes;
    boost::system::error_code ec;
    std::size_t consumed = 0;
    bool done = false;
};

// Pulls every node the parser can give from data.
void drain(resp::parser& p, std::string_view data, parse_result& r)
{
    while (auto n = p.consume(data, r.ec))
        r.nodes.push_back({n->data_type, n->aggregate_size, n->depth, std::string(n->value)});
    r.consumed = p.consumed();
    r.done = p.done();
}

parse_result parse_all(std::string_view data, resp::limits lim = {})
{
    resp::parser p(lim);
    parse_result r;
    drain(p, data, r);
    return r;
}

// The first `split` bytes, then the rest: the same prefix grows, as the contract requires.
parse_result parse_split(std::string_view data, std::size_t split, resp::limits lim = {})
{
    resp::parser p(lim);
    parse_result r;
    drain(p, data.substr(0, split), r);
    if (!r.ec && !r.done) drain(p, data, r);
    return r;
}

parse_result parse_bytewise(std::string_view data, resp::limits lim = {})
{
    resp::parser p(lim);
    parse_result r;
    for (std::size_t k = 1; k <= data.size() && !r.ec && !r.done; ++k) drain(p, data.substr(0, k), r);
    return r;
}

resp::value build(const std::vector<owned_node>& nodes)
{
    resp::value_builder b;
    for (const auto& n : nodes) b.on_node({n.data_type, n.aggregate_size, n.depth, n.value});
    BOOST_REQUIRE(b.done());
    return b.take();
}

}  // namespace

BOOST_AUTO_TEST_SUITE(resp_parser)

BOOST_AUTO_TEST_CASE(every_sample_parses_to_its_value_and_consumes_exactly_its_bytes)
{
    for (const auto& s : resp::test::samples()) {
        BOOST_TEST_CONTEXT(s.name)
        {
            const auto r = parse_all(s.bytes);
            BOOST_TEST(!r.ec);
            BOOST_TEST(r.done);
            BOOST_TEST(r.consumed == s.bytes.size());
            BOOST_TEST(build(r.nodes) == s.expected);
        }
    }
}

BOOST_AUTO_TEST_CASE(every_sample_split_at_every_byte_gives_the_same_nodes)
{
    for (const auto& s : resp::test::samples()) {
        const auto whole = parse_all(s.bytes);
        for (std::size_t k = 0; k <= s.bytes.size(); ++k) {
            BOOST_TEST_CONTEXT(s.name << " split at " << k)
            {
                const auto r = parse_split(s.bytes, k);
                BOOST_TEST(!r.ec);
                BOOST_TEST(r.done);
                BOOST_TEST(r.consumed == s.bytes.size());
                BOOST_TEST(r.nodes == whole.nodes, boost::test_tools::per_element());
            }
        }
        const auto bytewise = parse_bytewise(s.bytes);
        BOOST_TEST(bytewise.nodes == whole.nodes, boost::test_tools::per_element());
    }
}

BOOST_AUTO_TEST_CASE(incomplete_message_needs_more_without_error)
{
    for (const auto& s : resp::test::samples()) {
        for (std::size_t k = 0; k < s.bytes.size(); ++k) {
            BOOST_TEST_CONTEXT(s.name << " prefix " << k)
            {
                const auto r = parse_all(std::string_view(s.bytes).substr(0, k));
                BOOST_TEST(!r.ec);
                BOOST_TEST(!r.done);
            }
        }
    }
}

BOOST_AUTO_TEST_CASE(nodes_are_pre_order_with_depth_and_pair_counts)
{
    const auto r = parse_all("*2\r\n%1\r\n+k\r\n|1\r\n+a\r\n+b\r\n:1\r\n$-1\r\n");
    const std::vector<owned_node> expected{
        {type::array, 2, 0, ""},          {type::map, 1, 1, ""},
        {type::simple_string, 0, 2, "k"}, {type::attribute, 1, 2, ""},
        {type::simple_string, 0, 3, "a"}, {type::simple_string, 0, 3, "b"},
        {type::integer, 0, 2, "1"},       {type::null, 0, 1, ""},
    };
    BOOST_TEST(r.nodes == expected, boost::test_tools::per_element());
    BOOST_TEST(r.done);
}

BOOST_AUTO_TEST_CASE(verbatim_node_keeps_its_format_prefix)
{
    const auto r = parse_all("=8\r\ntxt:abcd\r\n");
    BOOST_REQUIRE(r.nodes.size() == 1u);
    BOOST_TEST(r.nodes[0].value == "txt:abcd");
}

BOOST_AUTO_TEST_CASE(stops_at_the_end_of_the_first_of_pipelined_messages)
{
    const std::string data = "*2\r\n+a\r\n+b\r\n:5\r\n$3\r\nxyz\r\n";
    resp::parser p;
    parse_result r;
    drain(p, data, r);
    BOOST_TEST(r.done);
    BOOST_TEST(r.consumed == 12u);
    BOOST_TEST(r.nodes.size() == 3u);
    // Done: further calls give nothing, and no error.
    boost::system::error_code ec;
    BOOST_TEST(!p.consume(data, ec));
    BOOST_TEST(!ec);

    p.reset();
    BOOST_TEST(!p.done());
    BOOST_TEST(p.consumed() == 0u);
    const auto second = p.consume(std::string_view(data).substr(12), ec);
    BOOST_REQUIRE(second);
    BOOST_TEST(second->value == "5");
    BOOST_TEST(p.done());
    BOOST_TEST(p.consumed() == 4u);
}

BOOST_AUTO_TEST_CASE(line_of_exactly_max_line_length_is_accepted)
{
    const std::string line(64 * 1024, 'a');
    const auto r = parse_all("+" + line + "\r\n");
    BOOST_TEST(!r.ec);
    BOOST_TEST(r.done);
}

BOOST_AUTO_TEST_CASE(bulk_of_exactly_max_bulk_length_is_accepted)
{
    resp::limits lim;
    lim.max_bulk_length = 10;
    const auto r = parse_all("$10\r\n0123456789\r\n", lim);
    BOOST_TEST(!r.ec);
    BOOST_TEST(r.done);
}

BOOST_AUTO_TEST_CASE(declared_large_bulk_waits_for_its_bytes)
{
    const auto r = parse_all("$67108864\r\nabc");
    BOOST_TEST(!r.ec);
    BOOST_TEST(!r.done);
    BOOST_TEST(r.nodes.empty());
    BOOST_TEST(r.consumed == 11u);  // the header; the payload is only counted once whole
}

BOOST_AUTO_TEST_CASE(aggregate_of_exactly_max_size_is_accepted)
{
    resp::limits lim;
    lim.max_aggregate_size = 2;
    BOOST_TEST(!parse_all("*2\r\n:1\r\n:2\r\n", lim).ec);
    BOOST_TEST(!parse_all("%2\r\n:1\r\n:2\r\n:3\r\n:4\r\n", lim).ec);
    BOOST_TEST(parse_all("~3\r\n", lim).ec == resp::error::aggregate_too_large);
}

BOOST_AUTO_TEST_CASE(depth_limit_is_configurable)
{
    resp::limits lim;
    lim.max_depth = 2;
    BOOST_TEST(!parse_all("*1\r\n*1\r\n:1\r\n", lim).ec);
    BOOST_TEST(!parse_all("*1\r\n*1\r\n*0\r\n", lim).ec);  // an empty aggregate opens no level
    BOOST_TEST(parse_all("*1\r\n*1\r\n*1\r\n:1\r\n", lim).ec == resp::error::nesting_too_deep);
    BOOST_TEST(parse_all("*1\r\n*1\r\n|1\r\n", lim).ec == resp::error::nesting_too_deep);
    lim.max_depth = 0;
    BOOST_TEST(!parse_all(":1\r\n", lim).ec);
    BOOST_TEST(parse_all("*1\r\n", lim).ec == resp::error::nesting_too_deep);
}

struct bad_case {
    const char* name;
    std::string bytes;
    resp::error expected;
    resp::limits lim = {};
};

std::vector<bad_case> bad_cases()
{
    using resp::error;
    resp::limits tiny;
    tiny.max_message_size = 20;
    return {
        {"unknown type byte", "?abc\r\n", error::invalid_type},
        {"empty line", "\r\n", error::invalid_type},
        {"type byte alone, no CRLF yet", "x", error::invalid_type},
        {"streamed string chunk", ";3\r\nabc\r\n", error::invalid_type},
        {"stream end", ".\r\n", error::invalid_type},
        {"bad type inside an array", "*2\r\n:1\r\n@x\r\n", error::invalid_type},
        {"integer with a letter", ":12a\r\n", error::invalid_integer},
        {"empty integer", ":\r\n", error::invalid_integer},
        {"sign only", ":-\r\n", error::invalid_integer},
        {"integer with a space", ": 1\r\n", error::invalid_integer},
        {"integer overflow", ":9223372036854775808\r\n", error::invalid_integer},
        {"integer underflow", ":-9223372036854775809\r\n", error::invalid_integer},
        {"huge integer", ":123456789012345678901234567890\r\n", error::invalid_integer},
        {"bad integer in a nested array", "*2\r\n:1\r\n*1\r\n:x\r\n", error::invalid_integer},
        {"double without fraction digits", ",1.\r\n", error::invalid_double},
        {"double without integral digits", ",.5\r\n", error::invalid_double},
        {"double word", ",abc\r\n", error::invalid_double},
        {"empty double", ",\r\n", error::invalid_double},
        {"double without exponent digits", ",1e\r\n", error::invalid_double},
        {"capitalised Inf", ",Inf\r\n", error::invalid_double},
        {"boolean x", "#x\r\n", error::invalid_boolean},
        {"empty boolean", "#\r\n", error::invalid_boolean},
        {"boolean tt", "#tt\r\n", error::invalid_boolean},
        {"negative bulk length", "$-2\r\n", error::invalid_length},
        {"negative array count", "*-5\r\n", error::invalid_length},
        {"non-digit length", "$abc\r\n", error::invalid_length},
        {"empty length", "$\r\n", error::invalid_length},
        {"plus length", "$+3\r\nabc\r\n", error::invalid_length},
        {"null map", "%-1\r\n", error::invalid_length},
        {"null bulk error", "!-1\r\n", error::invalid_length},
        {"null verbatim", "=-1\r\n", error::invalid_length},
        {"length overflow", "$99999999999999999999999\r\n", error::invalid_length},
        {"CR without LF", "+OK\rX", error::missing_crlf},
        {"LF without CR", "+OK\n", error::missing_crlf},
        {"bulk longer than declared", "$3\r\nabcd\r\n", error::missing_crlf},
        {"bulk shorter than declared", "$3\r\nab\r\n\r\n", error::missing_crlf},
        {"bulk terminated by LF", "$3\r\nabc\n\r", error::missing_crlf},
        {"too deep", resp::test::nested_arrays(17, ":1\r\n"), error::nesting_too_deep},
        {"bulk too large", "$67108865\r\n", error::bulk_too_large},
        {"bulk error too large", "!67108865\r\n", error::bulk_too_large},
        {"array too large", "*1048577\r\n", error::aggregate_too_large},
        {"map too large", "%1048577\r\n", error::aggregate_too_large},
        {"attribute too large", "|1048577\r\n", error::aggregate_too_large},
        {"line too long without CRLF", "+" + std::string(64 * 1024 + 1, 'a'), error::line_too_long},
        {"line too long with CRLF", "-" + std::string(64 * 1024 + 1, 'a') + "\r\n", error::line_too_long},
        {"bulk beyond the message limit", "$30\r\n", error::message_too_large, tiny},
        {"lines beyond the message limit", "*3\r\n+aaaaaaa\r\n+bbbbbbb\r\n+c\r\n", error::message_too_large, tiny},
        {"null with payload", "_x\r\n", error::invalid_null},
        {"big number with a letter", "(12a\r\n", error::invalid_big_number},
        {"empty big number", "(\r\n", error::invalid_big_number},
        {"verbatim without format", "=3\r\ntxt\r\n", error::invalid_verbatim},
        {"verbatim without colon", "=5\r\ntxt-a\r\n", error::invalid_verbatim},
        {"streamed bulk", "$?\r\n", error::streaming_not_supported},
        {"streamed array", "*?\r\n", error::streaming_not_supported},
        {"streamed map", "%?\r\n", error::streaming_not_supported},
    };
}

BOOST_AUTO_TEST_CASE(malformed_input_gives_its_error_at_every_split)
{
    for (const auto& c : bad_cases()) {
        BOOST_TEST_CONTEXT(c.name)
        {
            const auto whole = parse_all(c.bytes, c.lim);
            BOOST_TEST(whole.ec == c.expected);
            BOOST_TEST(whole.ec == redlock::condition::protocol);
            BOOST_TEST(!whole.done);
            BOOST_TEST(parse_bytewise(c.bytes, c.lim).ec == c.expected);
            // Long lines would make every split O(n^2) in the test itself: sample their splits.
            const std::size_t step = c.bytes.size() > 1000 ? 997 : 1;
            for (std::size_t k = 0; k <= c.bytes.size(); k += step)
                BOOST_TEST(parse_split(c.bytes, k, c.lim).ec == c.expected, "split at " << k);
        }
    }
}

BOOST_AUTO_TEST_CASE(error_is_sticky_until_reset)
{
    resp::parser p;
    boost::system::error_code ec;
    BOOST_TEST(!p.consume("#x\r\n", ec));
    BOOST_TEST(ec == resp::error::invalid_boolean);
    BOOST_TEST(!p.consume("#x\r\n", ec));
    BOOST_TEST(ec == resp::error::invalid_boolean);
    p.reset();
    const auto n = p.consume("#t\r\n", ec);
    BOOST_TEST(!ec);
    BOOST_REQUIRE(n);
    BOOST_TEST(n->value == "t");
}

BOOST_AUTO_TEST_CASE(shorter_data_than_consumed_is_ignored_not_read)
{
    resp::parser p;
    boost::system::error_code ec;
    BOOST_TEST(p.consume("*2\r\n:1\r\n", ec).has_value());
    BOOST_TEST(p.consume("*2\r\n:1\r\n", ec).has_value());
    BOOST_TEST(!p.consume("*2", ec));  // a contract violation must not read out of bounds
    BOOST_TEST(!ec);
}

BOOST_AUTO_TEST_CASE(error_messages_and_category)
{
    const boost::system::error_code ec = resp::error::bulk_too_large;
    BOOST_TEST(std::string(ec.category().name()) == "redlock.resp");
    BOOST_TEST(ec.message() == "RESP: bulk string longer than the limit");
    BOOST_TEST(ec == redlock::condition::protocol);
    BOOST_TEST(ec != redlock::condition::timeout);
    for (int e = 1; e <= static_cast<int>(resp::error::streaming_not_supported); ++e)
        BOOST_TEST(resp::make_error_code(static_cast<resp::error>(e)).message().rfind("RESP: ", 0) == 0u);
}

BOOST_AUTO_TEST_CASE(type_helpers)
{
    BOOST_TEST(resp::is_aggregate(type::attribute));
    BOOST_TEST(resp::is_aggregate(type::push));
    BOOST_TEST(!resp::is_aggregate(type::bulk_string));
    BOOST_TEST(!resp::is_aggregate(type::null));
    BOOST_TEST(resp::is_error(type::simple_error));
    BOOST_TEST(resp::is_error(type::bulk_error));
    BOOST_TEST(!resp::is_error(type::verbatim_string));
    static_assert(resp::to_string(type::double_type) == "double");
    BOOST_TEST(resp::to_string(type::verbatim_string) == "verbatim_string");
}

BOOST_AUTO_TEST_SUITE_END()
