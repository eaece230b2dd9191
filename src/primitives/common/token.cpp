#include "common/hex.hpp"
#include "primitives/common/token.hpp"

#include <array>
#include <atomic>
#include <cerrno>
#include <pthread.h>
#include <sys/random.h>
#include <system_error>

namespace redlock::detail {

namespace {

void fill_random(unsigned char* out, std::size_t size)
{
    std::size_t filled = 0;
    while (filled < size) {
        ssize_t n = ::getrandom(out + filled, size - filled, 0);
        if (n < 0) {
            if (errno == EINTR) continue;
            throw std::system_error(errno, std::generic_category(), "getrandom");
        }
        filled += static_cast<std::size_t>(n);
    }
}

// Bumped in a forked child: bytes buffered before the fork are the parent's too, and a token must never be
// issued twice.
std::atomic<unsigned> fork_generation{0};
void on_fork_child() noexcept
{
    fork_generation.fetch_add(1, std::memory_order_relaxed);
}
const int fork_hook_registered = ::pthread_atfork(nullptr, nullptr, on_fork_child);

// One getrandom(2) call per 256 tokens rather than one per token; each byte is handed out once.
class random_pool {
public:
    void take(unsigned char* out, std::size_t size)
    {
        if (generation_ != fork_generation.load(std::memory_order_relaxed) || used_ + size > bytes_.size()) refill();
        for (std::size_t i = 0; i < size; ++i) {
            out[i] = bytes_[used_];
            bytes_[used_++] = 0;
        }
    }

private:
    void refill()
    {
        fill_random(bytes_.data(), bytes_.size());
        used_ = 0;
        generation_ = fork_generation.load(std::memory_order_relaxed);
    }

    std::array<unsigned char, 4096> bytes_{};
    std::size_t used_ = 4096;
    unsigned generation_ = 0;
};

}  // namespace

std::string random_token()
{
    (void)fork_hook_registered;
    thread_local random_pool pool;
    std::array<unsigned char, 16> bytes{};
    pool.take(bytes.data(), bytes.size());
    return to_hex(bytes);
}

}  // namespace redlock::detail
