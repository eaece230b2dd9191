#include "service_process.hpp"
#include "subprocess.hpp"

#include <csignal>
#include <regex>
#include <stdexcept>
#include <thread>

namespace redlock::test {

service_process::service_process(std::vector<std::string> args, std::string output_file,
                                 std::chrono::milliseconds ready_within)
    : output_file_(std::move(output_file))
{
    pid_ = spawn_process({.args = std::move(args), .env = environment_with({}), .output_file = output_file_});
    const std::regex listening(R"(listening on [^\s]+:(\d+))");
    const auto deadline = std::chrono::steady_clock::now() + ready_within;
    while (std::chrono::steady_clock::now() < deadline) {
        std::smatch m;
        const std::string out = file_contents(output_file_);
        if (std::regex_search(out, m, listening)) {
            port_ = static_cast<std::uint16_t>(std::stoi(m[1].str()));
            return;
        }
        int status = 0;
        if (wait_for_exit(pid_, std::chrono::milliseconds(0), &status)) {
            pid_ = -1;
            throw std::runtime_error("the service exited (status " + std::to_string(exit_status(status)) +
                                     ") before listening:\n" + out);
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    stop_process(pid_, std::chrono::seconds(1));
    pid_ = -1;
    throw std::runtime_error("the service did not listen in time:\n" + file_contents(output_file_));
}

service_process::~service_process()
{
    if (pid_ > 0) stop_process(pid_, std::chrono::seconds(2));
}

void service_process::signal(int signal_number) const
{
    const pid_t pid = pid_;
    if (pid > 0) ::kill(pid, signal_number);
}

std::optional<int> service_process::wait_exit(std::chrono::milliseconds limit)
{
    if (pid_ <= 0) return std::nullopt;
    int status = 0;
    if (!wait_for_exit(pid_, limit, &status)) return std::nullopt;
    pid_ = -1;
    return exit_status(status);
}

std::string service_process::output() const
{
    return file_contents(output_file_);
}

}  // namespace redlock::test
