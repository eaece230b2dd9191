// The exit codes of `redlock`, from sysexits.h where one fits, so scripts can tell failures apart.
#pragma once

namespace redlock::cli::exit_code {

inline constexpr int ok = 0;
inline constexpr int usage = 64;        // EX_USAGE: bad flag, empty key, ttl <= 0, bad URL, no command
inline constexpr int unavailable = 69;  // EX_UNAVAILABLE: no quorum of nodes reachable until --wait ran out
inline constexpr int lost = 70;         // EX_SOFTWARE: the lease was lost while the command ran
inline constexpr int busy = 75;         // EX_TEMPFAIL: the lock stayed held by others until --wait ran out
inline constexpr int cannot_run = 126;  // the command exists but could not be executed (as sh and env say)
inline constexpr int not_found = 127;   // the command was not found

// A process that died by signal n reports 128 + n, as shells do.
inline constexpr int signal_base = 128;

}  // namespace redlock::cli::exit_code
