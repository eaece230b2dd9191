#include "resp/parser.hpp"

#include <cstdint>
#include <limits>

namespace redlock::resp {
namespace {

bool is_digit(char c) noexcept
{
    return c >= '0' && c <= '9';
}

bool all_digits(std::string_view s) noexcept
{
    if (s.empty()) return false;
    for (char c : s)
        if (!is_digit(c)) return false;
    return true;
}

std::string_view drop_sign(std::string_view s) noexcept
{
    if (!s.empty() && (s.front() == '+' || s.front() == '-')) s.remove_prefix(1);
    return s;
}

// [+-]digits within the int64 range.
bool valid_integer(std::string_view s) noexcept
{
    const bool negative = !s.empty() && s.front() == '-';
    s = drop_sign(s);
    if (!all_digits(s)) return false;
    const std::uint64_t max = negative ? std::uint64_t{1} << 63 : std::numeric_limits<std::int64_t>::max();
    std::uint64_t v = 0;
    for (char c : s) {
        const auto d = static_cast<std::uint64_t>(c - '0');
        if (v > (max - d) / 10) return false;
        v = v * 10 + d;
    }
    return true;
}

// inf, -inf, nan (any sign: some servers print -nan) or [+-]digits[.digits][(e|E)[+-]digits].
bool valid_double(std::string_view s) noexcept
{
    s = drop_sign(s);
    if (s == "inf" || s == "nan") return true;
    std::size_t i = 0;
    auto digits = [&] {
        const std::size_t start = i;
        while (i < s.size() && is_digit(s[i])) ++i;
        return i > start;
    };
    if (!digits()) return false;
    if (i < s.size() && s[i] == '.') {
        ++i;
        if (!digits()) return false;
    }
    if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
        ++i;
        if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
        if (!digits()) return false;
    }
    return i == s.size();
}

// A length or element count: digits, or -1 for the RESP2 nulls. Returns nullopt when invalid, -1 for null.
std::optional<std::int64_t> parse_length(std::string_view s) noexcept
{
    if (s == "-1") return -1;
    if (!all_digits(s)) return std::nullopt;
    std::uint64_t v = 0;
    for (char c : s) {
        const auto d = static_cast<std::uint64_t>(c - '0');
        if (v > (std::numeric_limits<std::int64_t>::max() - d) / 10) return std::nullopt;
        v = v * 10 + d;
    }
    return static_cast<std::int64_t>(v);
}

// Records the error; "no result" converts to any optional.
std::nullopt_t fail(error& err, error e) noexcept
{
    err = e;
    return std::nullopt;
}

std::optional<type> type_of(char c) noexcept
{
    switch (c) {
        case '+':
            return type::simple_string;
        case '-':
            return type::simple_error;
        case ':':
            return type::integer;
        case '$':
            return type::bulk_string;
        case '_':
            return type::null;
        case '#':
            return type::boolean;
        case ',':
            return type::double_type;
        case '(':
            return type::big_number;
        case '!':
            return type::bulk_error;
        case '=':
            return type::verbatim_string;
        case '*':
            return type::array;
        case '%':
            return type::map;
        case '~':
            return type::set;
        case '|':
            return type::attribute;
        case '>':
            return type::push;
        default:
            return std::nullopt;
    }
}

}  // namespace

parser::parser(limits lim) : limits_(lim), remaining_(lim.max_depth + 1, 0)
{
    reset();
}

void parser::reset() noexcept
{
    remaining_[0] = 1;
    depth_ = 0;
    consumed_ = 0;
    search_from_ = 0;
    bulk_length_ = 0;
    bulk_type_ = type::null;
    bulk_pending_ = false;
    done_ = false;
    error_ = {};
}

std::optional<node> parser::consume(std::string_view data, boost::system::error_code& ec)
{
    ec = {};
    if (error_ == error{} && !done_ && data.size() >= consumed_) {
        auto n = bulk_pending_ ? parse_bulk_payload(data, error_) : parse_next(data, error_);
        if (error_ == error{}) return n;
    }
    if (error_ != error{}) ec = error_;
    return std::nullopt;
}

// The text between the type byte and the CRLF of the line at consumed_, once it is complete.
std::optional<std::string_view> parser::read_line(std::string_view data, error& err)
{
    const std::size_t start = consumed_ + 1;
    std::size_t i = search_from_ > start ? search_from_ : start;
    // The peer controls the data: stop looking after max_line_length bytes so a line without CRLF cannot grow.
    constexpr std::size_t no_limit = std::numeric_limits<std::size_t>::max();
    const std::size_t limit = limits_.max_line_length > no_limit - start ? no_limit : start + limits_.max_line_length;
    for (; i < data.size(); ++i) {
        const char c = data[i];
        if (c == '\n') return fail(err, error::missing_crlf);
        if (c != '\r') {
            if (i >= limit) return fail(err, error::line_too_long);
        } else {
            if (i + 1 == data.size()) break;  // the LF may come in the next read
            if (data[i + 1] != '\n') return fail(err, error::missing_crlf);
            if (i + 2 > limits_.max_message_size) return fail(err, error::message_too_large);
            search_from_ = 0;
            consumed_ = i + 2;
            return data.substr(start, i - start);
        }
    }
    search_from_ = i;
    return std::nullopt;
}

std::optional<node> parser::parse_next(std::string_view data, error& err)
{
    if (data.size() <= consumed_) return std::nullopt;
    // Check the type byte at once: garbage is reported without waiting for a line end.
    const auto t = type_of(data[consumed_]);
    if (!t) return fail(err, error::invalid_type);
    const auto line = read_line(data, err);
    if (!line) return std::nullopt;

    switch (*t) {
        case type::simple_string:
        case type::simple_error:
            return emit(*t, 0, *line);
        case type::integer:
            return valid_integer(*line) ? emit(*t, 0, *line) : fail(err, error::invalid_integer);
        case type::null:
            return line->empty() ? emit(*t, 0, {}) : fail(err, error::invalid_null);
        case type::boolean:
            return *line == "t" || *line == "f" ? emit(*t, 0, *line) : fail(err, error::invalid_boolean);
        case type::double_type:
            return valid_double(*line) ? emit(*t, 0, *line) : fail(err, error::invalid_double);
        case type::big_number:
            return all_digits(drop_sign(*line)) ? emit(*t, 0, *line) : fail(err, error::invalid_big_number);
        default:
            break;  // a length or an element count
    }

    if (*line == "?") return fail(err, error::streaming_not_supported);
    const auto length = parse_length(*line);
    if (!length || (*length < 0 && *t != type::bulk_string && *t != type::array))
        return fail(err, error::invalid_length);
    if (*length < 0) return emit(type::null, 0, {});  // RESP2 null bulk string / null array
    const auto size = static_cast<std::size_t>(*length);

    if (is_aggregate(*t)) {
        if (size > limits_.max_aggregate_size) return fail(err, error::aggregate_too_large);
        if (size > 0 && depth_ + 1 > limits_.max_depth) return fail(err, error::nesting_too_deep);
        return emit(*t, size, {});
    }

    // A bulk: refuse an oversized one now, before anyone buffers its payload.
    if (size > limits_.max_bulk_length) return fail(err, error::bulk_too_large);
    if (size + 2 > limits_.max_message_size - consumed_)  // read_line keeps consumed_ <= max_message_size
        return fail(err, error::message_too_large);
    bulk_type_ = *t;
    bulk_length_ = size;
    bulk_pending_ = true;
    return parse_bulk_payload(data, err);
}

std::optional<node> parser::parse_bulk_payload(std::string_view data, error& err)
{
    // Only compare sizes until the whole payload is there: no rescanning, however it trickles in.
    if (data.size() - consumed_ < bulk_length_ + 2) return std::nullopt;
    const std::size_t end = consumed_ + bulk_length_;
    if (data[end] != '\r' || data[end + 1] != '\n') return fail(err, error::missing_crlf);
    const auto payload = data.substr(consumed_, bulk_length_);
    if (bulk_type_ == type::verbatim_string && (payload.size() < 4 || payload[3] != ':'))
        return fail(err, error::invalid_verbatim);
    consumed_ = end + 2;
    bulk_pending_ = false;
    return emit(bulk_type_, 0, payload);
}

// Reports a node at the current depth and moves the element counts on.
std::optional<node> parser::emit(type t, std::size_t size, std::string_view value)
{
    const node n{t, size, depth_, value};
    const std::size_t children = (t == type::map || t == type::attribute) ? 2 * size : size;
    // An attribute annotates the next value: it takes no slot of its parent.
    if (t != type::attribute) --remaining_[depth_];
    if (children > 0) {
        remaining_[++depth_] = children;
        return n;
    }
    while (depth_ > 0 && remaining_[depth_] == 0) --depth_;
    done_ = depth_ == 0 && remaining_[0] == 0;
    return n;
}

}  // namespace redlock::resp
