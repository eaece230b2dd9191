// Lease tokens: 128 random bits from the OS CSPRNG, hex encoded. Never a counter, a time or a PID.
#pragma once

#include <string>

namespace redlock::detail {

/// 32 lowercase hex characters from getrandom(2). Throws std::system_error if the kernel cannot provide them.
std::string random_token();

}  // namespace redlock::detail
