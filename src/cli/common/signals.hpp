// Signal names and numbers, and which signals the user's shell left ignored.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace redlock::cli {

// "TERM", "SIGTERM", "term" or "15"; nullopt for anything else (0, unknown names, out of range).
std::optional<int> parse_signal(std::string_view text);

// "SIGTERM", or "signal 40" for one without a name.
std::string signal_name(int signo);

// True if `signo` is ignored now. Called before we install handlers: a signal that the caller ignored (nohup,
// `cmd &` in a script) stays ignored, for us and for the command, as a shell would do.
bool signal_ignored(int signo);

}  // namespace redlock::cli
