// Writing to stdout and stderr, and messages filtered by -v / -q.
#pragma once

#include <redlock/diagnostics.hpp>

#include <string>
#include <string_view>
#include <vector>

namespace redlock::cli {

// Whole writes with write(2), retried on EINTR: the signal handlers we install do not set SA_RESTART, and a
// message lost to an interrupted stdio call is the one that says what failed.
void write_stdout(std::string_view text);
void write_stderr(std::string_view text);

enum class verbosity { quiet, normal, verbose };

// Every message goes to stderr with a "redlock: " prefix. Errors always print; notes (warnings that are not
// failures) print unless -q; details only with -v.
class reporter {
public:
    explicit reporter(verbosity v = verbosity::normal) : verbosity_(v) {}

    verbosity level() const noexcept { return verbosity_; }
    bool verbose() const noexcept { return verbosity_ == verbosity::verbose; }

    void error(std::string_view text) const;
    void note(std::string_view text) const;
    void detail(std::string_view text) const;
    // Lines printed as they are (indented continuation lines of an error or detail).
    void error_lines(const std::vector<std::string>& lines) const;
    void note_lines(const std::vector<std::string>& lines) const;
    void detail_lines(const std::vector<std::string>& lines) const;

private:
    verbosity verbosity_;
};

// One line per node: "  redis://127.0.0.1:7101  granted" / "failed: not connected to the node (...)". `refusal`
// says what a refusal means: a lock's holder, or a semaphore without a permit free there.
std::vector<std::string> describe_nodes(const std::vector<node_outcome>& nodes,
                                        std::string_view refusal = "held by another owner");

// Milliseconds with one decimal from a steady-clock duration: "12.3 ms".
std::string format_ms(double milliseconds);

}  // namespace redlock::cli
