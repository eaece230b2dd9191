// Bounds the parser enforces so that a hostile or broken peer cannot exhaust memory.
#pragma once

#include <cstddef>

namespace redlock::resp {

/// Bounds on one reply, enforced by the parser (node_config::limits sets them per connection).
struct limits {
    std::size_t max_depth = 16;                      ///< deepest nesting of aggregates (top level is depth 0)
    std::size_t max_bulk_length = 64 * 1024 * 1024;  ///< longest bulk string, bulk error or verbatim string
    std::size_t max_aggregate_size = 1024 * 1024;    ///< most elements in one aggregate (pairs for a map)
    std::size_t max_line_length = 64 * 1024;         ///< longest simple string/error/number line, without CRLF
    /// Largest top-level message in bytes. Bounds what the reader buffers (and builds) for one reply whose
    /// aggregates never end; must exceed max_bulk_length.
    std::size_t max_message_size = 128 * 1024 * 1024;
};

}  // namespace redlock::resp
