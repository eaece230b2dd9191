#include "common/hex.hpp"
#include "primitives/common/token.hpp"

#include <array>
#include <cerrno>
#include <sys/random.h>
#include <system_error>

namespace redlock::detail {

std::string random_token()
{
    std::array<unsigned char, 16> bytes{};
    std::size_t filled = 0;
    while (filled < bytes.size()) {
        ssize_t n = ::getrandom(bytes.data() + filled, bytes.size() - filled, 0);
        if (n < 0) {
            if (errno == EINTR) continue;
            throw std::system_error(errno, std::generic_category(), "getrandom");
        }
        filled += static_cast<std::size_t>(n);
    }
    return to_hex(bytes);
}

}  // namespace redlock::detail
