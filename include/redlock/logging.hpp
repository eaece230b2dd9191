// The library's log: what it decided on its own that an operator may want to know (a subscription refused, a
// lease lost, a fallback taken). No output of its own; a client hands each event to the handler you set.
#pragma once

#include <functional>
#include <string_view>

namespace redlock {

/// How much an event of the library's log matters.
enum class log_level { debug, info, warning, error };

/// Called on the client's strand (or a node's thread), with a message valid only during the call. Must not block
/// and must not throw.
using log_handler = std::function<void(log_level level, std::string_view message)>;

constexpr const char* to_string(log_level level) noexcept
{
    switch (level) {
        case log_level::debug:
            return "debug";
        case log_level::info:
            return "info";
        case log_level::warning:
            return "warning";
        case log_level::error:
            return "error";
    }
    return "?";
}

}  // namespace redlock
