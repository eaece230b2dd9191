// Lease tokens: 128 random bits from the OS CSPRNG (read a page at a time into memory a forked child finds
// wiped, each byte used once), hex encoded. Never a counter, a time or a PID. A VM snapshot restored twice
// would repeat the page's unused bytes, as it repeats any state: don't clone running lock holders.
#pragma once

#include <string>

namespace redlock::detail {

/// 32 lowercase hex characters from getrandom(2) bytes. Throws std::system_error if the kernel cannot provide them.
std::string random_token();

}  // namespace redlock::detail
