#include <redlock/resp/serialize.hpp>

#include <charconv>

namespace redlock::resp {
namespace {

void append_header(std::string& out, char marker, std::size_t n)
{
    char digits[24];
    const auto end = std::to_chars(digits, digits + sizeof digits, n).ptr;
    out += marker;
    out.append(digits, end);
    out += "\r\n";
}

}  // namespace

void append_array_header(std::string& out, std::size_t n)
{
    append_header(out, '*', n);
}

void append_bulk_string(std::string& out, std::string_view arg)
{
    append_header(out, '$', arg.size());
    out.append(arg);
    out += "\r\n";
}

void append_command(std::string& out, std::initializer_list<std::string_view> args)
{
    append_array_header(out, args.size());
    for (auto arg : args) append_bulk_string(out, arg);
}

}  // namespace redlock::resp
