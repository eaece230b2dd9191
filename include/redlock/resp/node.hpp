// One element of a reply, as the parser reports it.
#pragma once

#include <redlock/resp/type.hpp>

#include <cstddef>
#include <string_view>

namespace redlock::resp {

/// A view into the parser's input: valid only while those bytes are.
struct node {
    type data_type;
    /// Elements that follow for an aggregate (for map and attribute: key-value pairs); 0 for other types.
    std::size_t aggregate_size;
    /// 0 for the top-level element, parent depth + 1 for the elements of an aggregate.
    std::size_t depth;
    /// Scalar payload without type byte and CRLF; empty for aggregates and nulls.
    /// For a verbatim string this is the whole payload, format included ("txt:hello").
    std::string_view value;
};

}  // namespace redlock::resp
