// Lease tokens: 128 random bits from the OS CSPRNG (read in blocks, each byte used once, none reused across
// fork), hex encoded. Never a counter, a time or a PID.
#pragma once

#include <string>

namespace redlock::detail {

/// 32 lowercase hex characters from getrandom(2) bytes. Throws std::system_error if the kernel cannot provide them.
std::string random_token();

}  // namespace redlock::detail
