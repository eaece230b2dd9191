#include "cli/common/output.hpp"

#include <cerrno>
#include <cstdio>
#include <unistd.h>

namespace redlock::cli {
namespace {

void write_all(int fd, std::string_view text)
{
    while (!text.empty()) {
        const ssize_t n = ::write(fd, text.data(), text.size());
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return;  // nowhere left to report it
        text.remove_prefix(static_cast<std::size_t>(n));
    }
}

std::string prefixed(std::string_view text)
{
    std::string line = "redlock: ";
    line += text;
    line += '\n';
    return line;
}

std::string joined(const std::vector<std::string>& lines)
{
    std::string out;
    for (const auto& l : lines) {
        out += l;
        out += '\n';
    }
    return out;
}

}  // namespace

void write_stdout(std::string_view text)
{
    write_all(STDOUT_FILENO, text);
}

void write_stderr(std::string_view text)
{
    write_all(STDERR_FILENO, text);
}

void reporter::error(std::string_view text) const
{
    write_stderr(prefixed(text));
}

void reporter::note(std::string_view text) const
{
    if (verbosity_ != verbosity::quiet) write_stderr(prefixed(text));
}

void reporter::detail(std::string_view text) const
{
    if (verbosity_ == verbosity::verbose) write_stderr(prefixed(text));
}

void reporter::error_lines(const std::vector<std::string>& lines) const
{
    write_stderr(joined(lines));
}

void reporter::note_lines(const std::vector<std::string>& lines) const
{
    if (verbosity_ != verbosity::quiet) write_stderr(joined(lines));
}

void reporter::detail_lines(const std::vector<std::string>& lines) const
{
    if (verbosity_ == verbosity::verbose) write_stderr(joined(lines));
}

std::vector<std::string> describe_nodes(const std::vector<node_outcome>& nodes, std::string_view refusal)
{
    std::vector<std::string> lines;
    for (const auto& n : nodes) {
        std::string line = "  " + n.node + "  ";
        switch (n.what) {
            case node_outcome::result::granted:
                line += "granted";
                break;
            case node_outcome::result::refused:
                line += "refused (";
                line += refusal;
                line += ")";
                break;
            case node_outcome::result::failed:
                line += "failed: " + n.ec.message();
                break;
            case node_outcome::result::pending:
                line += "no answer before the outcome was decided";
                break;
        }
        if (!n.message.empty()) line += " (" + n.message + ")";
        lines.push_back(std::move(line));
    }
    return lines;
}

std::string format_ms(double milliseconds)
{
    char buffer[64];
    std::snprintf(buffer, sizeof buffer, "%.1f ms", milliseconds);
    return buffer;
}

}  // namespace redlock::cli
