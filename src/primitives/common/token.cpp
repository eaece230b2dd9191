#include "common/hex.hpp"
#include "primitives/common/token.hpp"

#include <array>
#include <cerrno>
#include <cstring>
#include <sys/mman.h>
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

// Random bytes read one page at a time, each handed out once. The page is MADV_WIPEONFORK: a forked child
// (however it forked: fork, _Fork, clone) finds it zeroed, sees no bytes left, and reads its own; bytes the
// parent hands out next are never the child's too. Without MADV_WIPEONFORK (Linux < 4.14) every token reads
// getrandom directly.
class random_pool {
public:
    random_pool()
    {
        void* p = ::mmap(nullptr, sizeof(page), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) return;
        if (::madvise(p, sizeof(page), MADV_WIPEONFORK) != 0) {
            ::munmap(p, sizeof(page));
            return;
        }
        page_ = static_cast<page*>(p);
    }
    ~random_pool()
    {
        if (page_) ::munmap(page_, sizeof(page));
    }
    random_pool(const random_pool&) = delete;
    random_pool& operator=(const random_pool&) = delete;

    void take(unsigned char* out, std::size_t size)
    {
        if (!page_) return fill_random(out, size);
        if (page_->left < size) {  // also right after a fork: the page reads as zeros
            fill_random(page_->bytes.data(), page_->bytes.size());
            page_->left = page_->bytes.size();
        }
        const auto at = page_->bytes.size() - page_->left;
        std::memcpy(out, page_->bytes.data() + at, size);
        std::memset(page_->bytes.data() + at, 0, size);
        page_->left -= size;
    }

private:
    struct page {
        std::size_t left;  // unused bytes at the end of `bytes`
        std::array<unsigned char, 4096 - sizeof(std::size_t)> bytes;
    };
    page* page_ = nullptr;
};

}  // namespace

std::string random_token()
{
    thread_local random_pool pool;
    std::array<unsigned char, 16> bytes{};
    pool.take(bytes.data(), bytes.size());
    return to_hex(bytes);
}

}  // namespace redlock::detail
