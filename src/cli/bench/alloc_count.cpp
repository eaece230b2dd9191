// Replaces the global operator new and delete of the `redlock` executable (every form: plain, array, aligned,
// nothrow, sized) with malloc / posix_memalign / free plus a relaxed counter of the news. The library never
// gets this file (CMakeLists.txt builds it from src/ without src/cli/), nor does the CLI's library redlock_cli_core
// that the unit tests link: only the executable, so users and tests keep their own allocator.
// Sanitizer builds keep the sanitizer's operator new, with its checks, and count nothing.
#include "cli/bench/alloc_count.hpp"

#include <atomic>
#include <cstdlib>
#include <new>

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define REDLOCK_CLI_COUNT_ALLOCATIONS 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || __has_feature(memory_sanitizer)
#define REDLOCK_CLI_COUNT_ALLOCATIONS 0
#endif
#endif
#ifndef REDLOCK_CLI_COUNT_ALLOCATIONS
#define REDLOCK_CLI_COUNT_ALLOCATIONS 1
#endif

#if REDLOCK_CLI_COUNT_ALLOCATIONS
namespace {

std::atomic<std::uint64_t> news{0};

void* allocate(std::size_t size)
{
    news.fetch_add(1, std::memory_order_relaxed);
    if (size == 0) size = 1;
    for (;;) {
        if (void* p = std::malloc(size)) return p;
        std::new_handler handler = std::get_new_handler();
        if (handler == nullptr) throw std::bad_alloc();
        handler();
    }
}

void* allocate_aligned(std::size_t size, std::align_val_t align)
{
    news.fetch_add(1, std::memory_order_relaxed);
    if (size == 0) size = 1;
    std::size_t alignment = static_cast<std::size_t>(align);
    if (alignment < sizeof(void*)) alignment = sizeof(void*);  // posix_memalign's minimum
    for (;;) {
        void* p = nullptr;
        if (::posix_memalign(&p, alignment, size) == 0) return p;
        std::new_handler handler = std::get_new_handler();
        if (handler == nullptr) throw std::bad_alloc();
        handler();
    }
}

template <class F>
void* no_throw(F&& f) noexcept
{
    try {
        return f();
    } catch (...) {
        return nullptr;
    }
}

}  // namespace

namespace redlock::cli {

bool counting_allocations() noexcept
{
    return true;
}

std::uint64_t allocation_count() noexcept
{
    return news.load(std::memory_order_relaxed);
}

}  // namespace redlock::cli

void* operator new(std::size_t size)
{
    return allocate(size);
}
void* operator new[](std::size_t size)
{
    return allocate(size);
}
void* operator new(std::size_t size, const std::nothrow_t&) noexcept
{
    return no_throw([&] { return allocate(size); });
}
void* operator new[](std::size_t size, const std::nothrow_t&) noexcept
{
    return no_throw([&] { return allocate(size); });
}
void* operator new(std::size_t size, std::align_val_t align)
{
    return allocate_aligned(size, align);
}
void* operator new[](std::size_t size, std::align_val_t align)
{
    return allocate_aligned(size, align);
}
void* operator new(std::size_t size, std::align_val_t align, const std::nothrow_t&) noexcept
{
    return no_throw([&] { return allocate_aligned(size, align); });
}
void* operator new[](std::size_t size, std::align_val_t align, const std::nothrow_t&) noexcept
{
    return no_throw([&] { return allocate_aligned(size, align); });
}

void operator delete(void* p) noexcept
{
    std::free(p);
}
void operator delete[](void* p) noexcept
{
    std::free(p);
}
void operator delete(void* p, std::size_t) noexcept
{
    std::free(p);
}
void operator delete[](void* p, std::size_t) noexcept
{
    std::free(p);
}
void operator delete(void* p, const std::nothrow_t&) noexcept
{
    std::free(p);
}
void operator delete[](void* p, const std::nothrow_t&) noexcept
{
    std::free(p);
}
void operator delete(void* p, std::align_val_t) noexcept
{
    std::free(p);
}
void operator delete[](void* p, std::align_val_t) noexcept
{
    std::free(p);
}
void operator delete(void* p, std::size_t, std::align_val_t) noexcept
{
    std::free(p);
}
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept
{
    std::free(p);
}
void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept
{
    std::free(p);
}
void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept
{
    std::free(p);
}

#else  // a sanitizer's operator new stays

namespace redlock::cli {

bool counting_allocations() noexcept
{
    return false;
}

std::uint64_t allocation_count() noexcept
{
    return 0;
}

}  // namespace redlock::cli

#endif
