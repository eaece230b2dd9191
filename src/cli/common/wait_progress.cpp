#include "cli/common/wait_progress.hpp"

namespace redlock::cli {

wait_progress::wait_progress(boost::asio::any_io_executor ex, const reporter& report, const diagnostics& last_attempt,
                             std::size_t quorum, node_lines_fn node_lines)
    : timer_(std::move(ex)),
      report_(report),
      last_attempt_(last_attempt),
      quorum_(quorum),
      node_lines_(std::move(node_lines))
{}

void wait_progress::start(std::string what)
{
    what_ = std::move(what);
    since_ = std::chrono::steady_clock::now();
    running_ = true;
    schedule();
}

void wait_progress::stop()
{
    running_ = false;
    timer_.cancel();
}

void wait_progress::schedule()
{
    timer_.expires_after(report_.verbose() ? std::chrono::seconds(5) : std::chrono::seconds(10));
    timer_.async_wait([this](error_code ec) {
        if (ec || !running_) return;
        const auto& nodes = last_attempt_.nodes();
        std::size_t failed = 0;
        for (const auto& n : nodes)
            if (n.what == node_outcome::result::failed) ++failed;
        const bool unreachable = !nodes.empty() && failed > nodes.size() - quorum_;
        const auto waited = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() - since_);
        std::string text = "still waiting for " + what_ + " after " + std::to_string(waited.count()) + " s";
        if (!last_attempt_.message().empty()) text += "; last attempt: " + std::string(last_attempt_.message());
        if (report_.verbose()) {
            report_.detail(text);
            report_.detail_lines(node_lines_(nodes));
        } else if (unreachable) {
            report_.note(text);
            report_.note_lines(node_lines_(nodes));
        }
        schedule();
    });
}

}  // namespace redlock::cli
