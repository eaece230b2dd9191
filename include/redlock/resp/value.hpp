// An owned reply tree, and the builder that assembles one from parser nodes.
#pragma once

#include <redlock/resp/node.hpp>
#include <redlock/resp/type.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace redlock::resp {

/// One reply (or one element of an aggregate reply), owning its data.
class value {
public:
    type data_type = type::null;
    /// Scalar payload: string, error text, integer digits, double text, "t"/"f", big number digits.
    /// For a verbatim string: the payload without its "txt:" prefix. Empty for aggregates and nulls.
    std::string text;
    /// Format of a verbatim string, e.g. "txt"; empty otherwise.
    std::string format;
    /// array/set/push: the elements; map/attribute: key0, value0, key1, value1, ...
    std::vector<value> elements;
    /// Flattened key/value pairs of the attribute(s) that preceded this value, if any.
    std::vector<value> attributes;

    bool is_error() const noexcept { return resp::is_error(data_type); }
    bool is_null() const noexcept { return data_type == type::null; }
    bool is_aggregate() const noexcept { return resp::is_aggregate(data_type); }

    /// The integer of an integer reply, or of a simple/bulk string holding one ("42"); nullopt otherwise.
    std::optional<std::int64_t> as_integer() const noexcept;

    /// The error text of an error reply ("ERR wrong number of arguments..."), or empty.
    std::string_view error_text() const noexcept { return is_error() ? std::string_view(text) : std::string_view(); }

    friend bool operator==(const value&, const value&) = default;
};

/// A readable, redis-cli-like rendering for logs, diagnostics and test failures.
std::string to_string(const value& v);

/// Assembles the nodes of one message, in the parser's order, into a value.
class value_builder {
public:
    /// Adds the next node. Its depth must follow the parser's pre-order.
    void on_node(const node& n);

    /// True once the top-level value is complete.
    bool done() const noexcept { return done_; }

    /// The completed value (call once done()); the builder is then empty.
    value take();

    /// Forget any partial value.
    void reset() noexcept;

private:
    struct frame {
        value v;
        std::size_t remaining;       // elements still to come
        std::vector<value> pending;  // attribute pairs waiting for this aggregate's next element
    };
    void finish(value v);
    std::vector<value>& pending() noexcept { return stack_.empty() ? pending_ : stack_.back().pending; }

    std::vector<frame> stack_;    // open aggregates (attributes included), outermost first
    std::vector<value> pending_;  // attribute pairs waiting for the top-level value
    value result_;
    bool done_ = false;
};

}  // namespace redlock::resp
