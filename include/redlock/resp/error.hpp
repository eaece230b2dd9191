// Errors of the RESP3 codec: the bytes from the peer are not valid RESP3 or exceed our limits.
#pragma once

#include <boost/system/error_code.hpp>

#include <type_traits>

namespace redlock::resp {

/// Category "redlock.resp"; every value compares equal to redlock::condition::protocol.
enum class error {
    invalid_type = 1,         ///< a type byte that is not one of + - : $ _ # , ( ! = * % ~ | >
    invalid_integer,          ///< an integer reply that is not [+-]digits or overflows 64 bits
    invalid_double,           ///< a double that is not inf, -inf, nan or [+-]digits[.digits][e[+-]digits]
    invalid_boolean,          ///< a boolean other than t or f
    invalid_length,           ///< a length or element count that is not digits (or -1 where RESP2 allows it)
    missing_crlf,             ///< a line or bulk payload not terminated by CRLF where it must be
    nesting_too_deep,         ///< aggregates nested deeper than limits::max_depth
    bulk_too_large,           ///< a declared bulk length above limits::max_bulk_length
    aggregate_too_large,      ///< a declared element count above limits::max_aggregate_size
    line_too_long,            ///< a line longer than limits::max_line_length
    message_too_large,        ///< a top-level message longer than limits::max_message_size
    invalid_null,             ///< a null ('_') with a payload
    invalid_big_number,       ///< a big number that is not [+-]digits
    invalid_verbatim,         ///< a verbatim string without its "xxx:" format prefix
    streaming_not_supported,  ///< a streamed string or aggregate ("$?", "*?"): Redis never sends them
};

const boost::system::error_category& error_category() noexcept;

inline boost::system::error_code make_error_code(error e) noexcept
{
    return {static_cast<int>(e), error_category()};
}

}  // namespace redlock::resp

template <>
struct boost::system::is_error_code_enum<redlock::resp::error> : std::true_type {};
