// A request's deadline, handed down to every step so the steps share one budget instead of adding up theirs.
#pragma once

#include <algorithm>
#include <chrono>

namespace http_inventory {

struct deadline {
    std::chrono::steady_clock::time_point at;

    static deadline after(std::chrono::milliseconds budget) { return {std::chrono::steady_clock::now() + budget}; }

    /// What is left, never negative; 0 once passed.
    std::chrono::milliseconds remaining() const
    {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(at - std::chrono::steady_clock::now());
        return std::max(left, std::chrono::milliseconds(0));
    }
    bool passed() const { return remaining().count() == 0; }
};

}  // namespace http_inventory
