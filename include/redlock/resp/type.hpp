// The RESP3 data types, as announced by the first byte of each element.
#pragma once

#include <cstdint>
#include <string_view>

namespace redlock::resp {

/// The RESP3 type of a reply element, from its first byte.
enum class type : std::uint8_t {
    simple_string,    ///< '+'
    simple_error,     ///< '-'
    integer,          ///< ':'
    bulk_string,      ///< '$'
    null,             ///< '_', and the RESP2 nulls "$-1" and "*-1"
    boolean,          ///< '#'
    double_type,      ///< ','
    big_number,       ///< '('
    bulk_error,       ///< '!'
    verbatim_string,  ///< '='
    array,            ///< '*'
    map,              ///< '%'
    set,              ///< '~'
    attribute,        ///< '|'
    push,             ///< '>'
};

/// True for the types whose node is followed by child nodes.
constexpr bool is_aggregate(type t) noexcept
{
    switch (t) {
        case type::array:
        case type::map:
        case type::set:
        case type::attribute:
        case type::push:
            return true;
        default:
            return false;
    }
}

/// True for the two error replies.
constexpr bool is_error(type t) noexcept
{
    return t == type::simple_error || t == type::bulk_error;
}

/// The type's name, e.g. "bulk_string".
constexpr std::string_view to_string(type t) noexcept
{
    switch (t) {
        case type::simple_string:
            return "simple_string";
        case type::simple_error:
            return "simple_error";
        case type::integer:
            return "integer";
        case type::bulk_string:
            return "bulk_string";
        case type::null:
            return "null";
        case type::boolean:
            return "boolean";
        case type::double_type:
            return "double";
        case type::big_number:
            return "big_number";
        case type::bulk_error:
            return "bulk_error";
        case type::verbatim_string:
            return "verbatim_string";
        case type::array:
            return "array";
        case type::map:
            return "map";
        case type::set:
            return "set";
        case type::attribute:
            return "attribute";
        case type::push:
            return "push";
    }
    return "unknown";
}

}  // namespace redlock::resp
