// Writes commands in the wire format Redis expects: an array of bulk strings.
#pragma once

#include <concepts>
#include <cstddef>
#include <initializer_list>
#include <iterator>
#include <ranges>
#include <string>
#include <string_view>

namespace redlock::resp {

/// Appends "*n\r\n".
void append_array_header(std::string& out, std::size_t n);

/// Appends "$len\r\narg\r\n". Any bytes are allowed in arg (binary safe).
void append_bulk_string(std::string& out, std::string_view arg);

/// Appends one command, e.g. append_command(out, {"SET", key, token, "NX", "PX", "30000"}).
void append_command(std::string& out, std::initializer_list<std::string_view> args);

/// Appends one command whose arguments are any (multi-pass) range of string_view-convertible items.
template <std::ranges::forward_range Range>
requires std::convertible_to<std::ranges::range_reference_t<const Range&>, std::string_view>
void append_command(std::string& out, const Range& args)
{
    append_array_header(out, static_cast<std::size_t>(std::ranges::distance(args)));
    for (auto&& arg : args) append_bulk_string(out, std::string_view(arg));
}

}  // namespace redlock::resp
