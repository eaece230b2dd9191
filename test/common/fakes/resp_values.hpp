// Reply values built by hand, for unit tests that read replies without a server.
#pragma once

#include <redlock/resp/value.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace redlock::test {

inline resp::value scalar(resp::type type, std::string text)
{
    resp::value v;
    v.data_type = type;
    v.text = std::move(text);
    return v;
}
inline resp::value bulk(std::string text)
{
    return scalar(resp::type::bulk_string, std::move(text));
}
inline resp::value integer(std::int64_t n)
{
    return scalar(resp::type::integer, std::to_string(n));
}
inline resp::value error_reply(std::string text)
{
    return scalar(resp::type::simple_error, std::move(text));
}
inline resp::value aggregate(resp::type type, std::vector<resp::value> elements)
{
    resp::value v;
    v.data_type = type;
    v.elements = std::move(elements);
    return v;
}
inline resp::value array(std::vector<resp::value> elements)
{
    return aggregate(resp::type::array, std::move(elements));
}

}  // namespace redlock::test
