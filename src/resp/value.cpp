#include <redlock/resp/value.hpp>

#include <charconv>
#include <cstdio>
#include <utility>

namespace redlock::resp {

std::optional<std::int64_t> value::as_integer() const noexcept
{
    if (data_type != type::integer && data_type != type::simple_string && data_type != type::bulk_string)
        return std::nullopt;
    std::string_view s = text;
    // from_chars rejects a leading '+', which RESP3 integers may carry.
    if (s.size() > 1 && s.front() == '+' && s[1] != '-') s.remove_prefix(1);
    std::int64_t v = 0;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc{} || end != s.data() + s.size() || s.empty()) return std::nullopt;
    return v;
}

namespace {

void append_quoted(std::string& out, std::string_view s)
{
    out += '"';
    for (unsigned char c : s) {
        switch (c) {
            case '"':
                out += "\\\"";
                break;
            case '\\':
                out += "\\\\";
                break;
            case '\r':
                out += "\\r";
                break;
            case '\n':
                out += "\\n";
                break;
            case '\t':
                out += "\\t";
                break;
            default:
                if (c >= 0x20 && c < 0x7f) {
                    out += static_cast<char>(c);
                } else {
                    char hex[5];
                    std::snprintf(hex, sizeof hex, "\\x%02x", c);
                    out += hex;
                }
        }
    }
    out += '"';
}

std::string_view empty_name(type t)
{
    switch (t) {
        case type::map:
            return "(empty map)";
        case type::set:
            return "(empty set)";
        case type::attribute:
            return "(empty attribute)";
        case type::push:
            return "(empty push)";
        default:
            return "(empty array)";
    }
}

char label_mark(type t)
{
    switch (t) {
        case type::map:
        case type::attribute:
            return '#';
        case type::set:
            return '~';
        case type::push:
            return '>';
        default:
            return ')';
    }
}

void render(std::string& out, const value& v, std::size_t indent);

// "1) a" / "1# k => v" lines; continuation lines are indented under the first element character.
void render_elements(std::string& out, type t, const std::vector<value>& elements, std::size_t indent)
{
    if (elements.empty()) {
        out += empty_name(t);
        return;
    }
    const bool pairs = t == type::map || t == type::attribute;
    const std::size_t count = pairs ? elements.size() / 2 : elements.size();
    const std::size_t width = std::to_string(count).size();
    for (std::size_t i = 0; i < count; ++i) {
        if (i > 0) out.append("\n").append(indent, ' ');
        std::string label = std::to_string(i + 1);
        label.insert(0, width - label.size(), ' ');
        label += label_mark(t);
        label += ' ';
        out += label;
        const std::size_t inner = indent + label.size();
        if (pairs) {
            render(out, elements[2 * i], inner);
            out += " => ";
            if (2 * i + 1 < elements.size()) render(out, elements[2 * i + 1], inner);
        } else {
            render(out, elements[i], inner);
        }
    }
}

void render(std::string& out, const value& v, std::size_t indent)
{
    if (!v.attributes.empty()) {
        out += "(attribute) ";
        render_elements(out, type::attribute, v.attributes, indent + 12);
        out.append("\n").append(indent, ' ');
    }
    switch (v.data_type) {
        case type::simple_string:
            out += v.text;
            break;
        case type::simple_error:
        case type::bulk_error:
            out.append("(error) ").append(v.text);
            break;
        case type::integer:
            out.append("(integer) ").append(v.text);
            break;
        case type::bulk_string:
            append_quoted(out, v.text);
            break;
        case type::null:
            out += "(nil)";
            break;
        case type::boolean:
            out += v.text == "t" ? "(true)" : "(false)";
            break;
        case type::double_type:
            out.append("(double) ").append(v.text);
            break;
        case type::big_number:
            out.append("(big number) ").append(v.text);
            break;
        case type::verbatim_string:
            out.append("(verbatim ").append(v.format).append(") ");
            append_quoted(out, v.text);
            break;
        case type::array:
        case type::map:
        case type::set:
        case type::attribute:
        case type::push:
            render_elements(out, v.data_type, v.elements, indent);
            break;
    }
}

// Nodes that follow n as its elements: maps and attributes count pairs.
std::size_t children_of(const node& n) noexcept
{
    if (!is_aggregate(n.data_type)) return 0;
    const bool pairs = n.data_type == type::map || n.data_type == type::attribute;
    return pairs ? 2 * n.aggregate_size : n.aggregate_size;
}

}  // namespace

std::string to_string(const value& v)
{
    std::string out;
    render(out, v, 0);
    return out;
}

void value_builder::on_node(const node& n)
{
    if (done_) return;  // one message per builder until take() or reset()
    value v;
    v.data_type = n.data_type;
    if (n.data_type == type::verbatim_string && n.value.size() >= 4) {
        v.format = n.value.substr(0, 3);
        v.text = n.value.substr(4);
    } else {
        v.text = n.value;
    }
    if (n.data_type != type::attribute) v.attributes = std::exchange(pending(), {});

    const std::size_t children = children_of(n);
    // No reserve(children): the count is the peer's claim, not bytes we have.
    if (children > 0)
        stack_.push_back({std::move(v), children, {}});
    else
        finish(std::move(v));
}

// Hands a completed value to its parent, closing every aggregate it completes.
void value_builder::finish(value v)
{
    for (;;) {
        if (v.data_type == type::attribute) {
            // An attribute takes no slot: its pairs wait for the value it annotates.
            auto& slot = pending();
            for (auto& e : v.elements) slot.push_back(std::move(e));
            return;
        }
        if (stack_.empty()) {
            result_ = std::move(v);
            done_ = true;
            return;
        }
        frame& top = stack_.back();
        top.v.elements.push_back(std::move(v));
        if (--top.remaining > 0) return;
        v = std::move(top.v);
        stack_.pop_back();
    }
}

value value_builder::take()
{
    value v = std::move(result_);
    reset();
    return v;
}

void value_builder::reset() noexcept
{
    stack_.clear();
    pending_.clear();
    result_ = value{};
    done_ = false;
}

}  // namespace redlock::resp
