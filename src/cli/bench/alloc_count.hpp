// How many times the global operator new ran in this process: src/cli/bench/alloc_count.cpp replaces every form of
// it (and of operator delete) in the `redlock` executable only, never in the library, so that `redlock
// bench` can report allocations per lock + release cycle.
#pragma once

#include <cstdint>

namespace redlock::cli {

// False in sanitizer builds: they keep their own operator new (and its checks), so nothing is counted.
bool counting_allocations() noexcept;

// Calls of any global operator new (plain, array, aligned, nothrow) so far, 0 when not counting. A relaxed
// counter: compare two readings taken on the thread that did the work (or after joining the others).
std::uint64_t allocation_count() noexcept;

}  // namespace redlock::cli
