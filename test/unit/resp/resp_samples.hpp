// Sample RESP3 messages with the values they must parse to, shared by the resp_* tests.
#pragma once

#include <redlock/resp/error.hpp>
#include <redlock/resp/value.hpp>

#include <ostream>
#include <string>
#include <utility>
#include <vector>

// Printers so that failed checks show readable operands.
namespace redlock::resp {
inline std::ostream& operator<<(std::ostream& os, error e)
{
    return os << make_error_code(e).message();
}
inline std::ostream& operator<<(std::ostream& os, type t)
{
    return os << to_string(t);
}
inline std::ostream& operator<<(std::ostream& os, const value& v)
{
    return os << to_string(v);
}
}  // namespace redlock::resp

namespace redlock::resp::test {

inline value scalar(type t, std::string text = {})
{
    value v;
    v.data_type = t;
    v.text = std::move(text);
    return v;
}

inline value aggregate(type t, std::vector<value> elements)
{
    value v;
    v.data_type = t;
    v.elements = std::move(elements);
    return v;
}

inline value verbatim(std::string format, std::string text)
{
    value v = scalar(type::verbatim_string, std::move(text));
    v.format = std::move(format);
    return v;
}

inline value annotated(value v, std::vector<value> attributes)
{
    v.attributes = std::move(attributes);
    return v;
}

inline value str(std::string s)
{
    return scalar(type::bulk_string, std::move(s));
}
inline value simple(std::string s)
{
    return scalar(type::simple_string, std::move(s));
}
inline value integer_reply(std::string s)
{
    return scalar(type::integer, std::move(s));
}

struct sample {
    std::string name;
    std::string bytes;
    value expected;
};

inline std::string nested_arrays(std::size_t levels, const std::string& leaf)
{
    std::string s;
    for (std::size_t i = 0; i < levels; ++i) s += "*1\r\n";
    return s + leaf;
}

inline value nested_value(std::size_t levels, value leaf)
{
    for (std::size_t i = 0; i < levels; ++i) leaf = aggregate(type::array, {std::move(leaf)});
    return leaf;
}

// One or more messages of every type, RESP2 nulls, nesting and attributes in every position.
inline std::vector<sample> samples()
{
    using enum type;
    return {
        {"simple string", "+OK\r\n", simple("OK")},
        {"empty simple string", "+\r\n", simple("")},
        {"simple error", "-ERR unknown command 'FOO'\r\n", scalar(simple_error, "ERR unknown command 'FOO'")},
        {"integer", ":1000\r\n", integer_reply("1000")},
        {"zero", ":0\r\n", integer_reply("0")},
        {"negative integer", ":-42\r\n", integer_reply("-42")},
        {"plus integer", ":+7\r\n", integer_reply("+7")},
        {"int64 max", ":9223372036854775807\r\n", integer_reply("9223372036854775807")},
        {"int64 min", ":-9223372036854775808\r\n", integer_reply("-9223372036854775808")},
        {"bulk string", "$5\r\nhello\r\n", str("hello")},
        {"empty bulk string", "$0\r\n\r\n", str("")},
        {"binary bulk string", std::string("$6\r\na\r\n\0b\n\r\n", 12), str(std::string("a\r\n\0b\n", 6))},
        {"null", "_\r\n", scalar(null)},
        {"RESP2 null bulk", "$-1\r\n", scalar(null)},
        {"RESP2 null array", "*-1\r\n", scalar(null)},
        {"true", "#t\r\n", scalar(boolean, "t")},
        {"false", "#f\r\n", scalar(boolean, "f")},
        {"double", ",3.14\r\n", scalar(double_type, "3.14")},
        {"double integral", ",10\r\n", scalar(double_type, "10")},
        {"double exponent", ",-1.5E-3\r\n", scalar(double_type, "-1.5E-3")},
        {"double exponent plus", ",1e+100\r\n", scalar(double_type, "1e+100")},
        {"inf", ",inf\r\n", scalar(double_type, "inf")},
        {"-inf", ",-inf\r\n", scalar(double_type, "-inf")},
        {"nan", ",nan\r\n", scalar(double_type, "nan")},
        {"big number", "(3492890328409238509324850943850943825024385\r\n",
         scalar(big_number, "3492890328409238509324850943850943825024385")},
        {"negative big number", "(-1\r\n", scalar(big_number, "-1")},
        {"bulk error", "!21\r\nSYNTAX invalid syntax\r\n", scalar(bulk_error, "SYNTAX invalid syntax")},
        {"verbatim", "=15\r\ntxt:Some string\r\n", verbatim("txt", "Some string")},
        {"empty verbatim", "=4\r\nmkd:\r\n", verbatim("mkd", "")},
        {"array", "*3\r\n:1\r\n:2\r\n:3\r\n",
         aggregate(array, {integer_reply("1"), integer_reply("2"), integer_reply("3")})},
        {"empty array", "*0\r\n", aggregate(array, {})},
        {"nested array", "*2\r\n*2\r\n+a\r\n+b\r\n$1\r\nc\r\n",
         aggregate(array, {aggregate(array, {simple("a"), simple("b")}), str("c")})},
        {"nested empty arrays", "*2\r\n*1\r\n*0\r\n_\r\n",
         aggregate(array, {aggregate(array, {aggregate(array, {})}), scalar(null)})},
        {"array with nulls", "*3\r\n$-1\r\n*-1\r\n_\r\n", aggregate(array, {scalar(null), scalar(null), scalar(null)})},
        {"mixed array", "*4\r\n#t\r\n,1.5\r\n(12\r\n=7\r\ntxt:abc\r\n",
         aggregate(array, {scalar(boolean, "t"), scalar(double_type, "1.5"), scalar(big_number, "12"),
                           verbatim("txt", "abc")})},
        {"map", "%2\r\n+first\r\n:1\r\n+second\r\n:2\r\n",
         aggregate(map, {simple("first"), integer_reply("1"), simple("second"), integer_reply("2")})},
        {"empty map", "%0\r\n", aggregate(map, {})},
        {"map of aggregates", "%2\r\n*1\r\n:1\r\n%1\r\n+k\r\n+v\r\n+x\r\n~0\r\n",
         aggregate(map, {aggregate(array, {integer_reply("1")}), aggregate(map, {simple("k"), simple("v")}),
                         simple("x"), aggregate(set, {})})},
        {"set", "~3\r\n+a\r\n+b\r\n+c\r\n", aggregate(set, {simple("a"), simple("b"), simple("c")})},
        {"push", ">3\r\n$7\r\nmessage\r\n$7\r\nchannel\r\n$5\r\nhello\r\n",
         aggregate(push, {str("message"), str("channel"), str("hello")})},
        {"top-level attribute (RESP3 spec example)",
         "|1\r\n+key-popularity\r\n%2\r\n$1\r\na\r\n,0.1923\r\n$1\r\nb\r\n,0.0012\r\n*2\r\n:2039123\r\n:9543892\r\n",
         annotated(aggregate(array, {integer_reply("2039123"), integer_reply("9543892")}),
                   {simple("key-popularity"), aggregate(map, {str("a"), scalar(double_type, "0.1923"), str("b"),
                                                              scalar(double_type, "0.0012")})})},
        {"attribute on first element", "*2\r\n|1\r\n+ttl\r\n:3600\r\n+a\r\n+b\r\n",
         aggregate(array, {annotated(simple("a"), {simple("ttl"), integer_reply("3600")}), simple("b")})},
        {"attribute on last element", "*1\r\n|1\r\n+a\r\n+b\r\n:5\r\n",
         aggregate(array, {annotated(integer_reply("5"), {simple("a"), simple("b")})})},
        {"two attributes", "|1\r\n+a\r\n:1\r\n|1\r\n+b\r\n:2\r\n+OK\r\n",
         annotated(simple("OK"), {simple("a"), integer_reply("1"), simple("b"), integer_reply("2")})},
        {"attributes at two depths", "|1\r\n+a\r\n+b\r\n|1\r\n|1\r\n+i\r\n+j\r\n+k\r\n+v\r\n+OK\r\n",
         annotated(simple("OK"),
                   {simple("a"), simple("b"), annotated(simple("k"), {simple("i"), simple("j")}), simple("v")})},
        {"empty attribute", "|0\r\n+x\r\n", simple("x")},
        {"attribute on a map value", "%1\r\n+k\r\n|1\r\n+meta\r\n_\r\n*1\r\n:1\r\n",
         aggregate(map,
                   {simple("k"), annotated(aggregate(array, {integer_reply("1")}), {simple("meta"), scalar(null)})})},
        {"attribute inside an attribute", "|1\r\n|1\r\n+i\r\n+j\r\n+k\r\n+v\r\n+OK\r\n",
         annotated(simple("OK"), {annotated(simple("k"), {simple("i"), simple("j")}), simple("v")})},
        {"attribute on a push", "|1\r\n+a\r\n+b\r\n>1\r\n+p\r\n",
         annotated(aggregate(push, {simple("p")}), {simple("a"), simple("b")})},
        {"deepest allowed nesting", nested_arrays(16, ":1\r\n"), nested_value(16, integer_reply("1"))},
    };
}

}  // namespace redlock::resp::test
