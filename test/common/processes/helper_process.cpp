#include <common/processes/helper_process.hpp>
#include <common/processes/subprocess.hpp>
#include <signal.h>
#include <thread>

namespace redlock::test {

helper_process::helper_process(const std::string& helper, const std::string& dir, const std::string& name,
                               std::vector<std::string> args)
    : output_(dir + "/" + name + ".out")
{
    args.insert(args.begin(), std::string(REDLOCK_TEST_HELPER_DIR) + "/helper_" + helper);
    pid_ = spawn_process({std::move(args), environment_with({}), output_});
}

helper_process::~helper_process()
{
    if (!exited_) stop_process(pid_, std::chrono::seconds(2));
}

void helper_process::signal(int signal_number) const
{
    if (!exited_) ::kill(pid_, signal_number);
}

bool helper_process::running()
{
    return wait(std::chrono::milliseconds(0)) == -1;
}

int helper_process::wait(std::chrono::milliseconds limit)
{
    if (!exited_) exited_ = wait_for_exit(pid_, limit, &status_);
    return exited_ ? exit_status(status_) : -1;
}

std::string helper_process::output() const
{
    return file_contents(output_);
}

bool helper_process::wait_for_output(const std::string& text, std::chrono::milliseconds limit) const
{
    const auto deadline = std::chrono::steady_clock::now() + limit;
    for (;;) {
        if (output().find(text) != std::string::npos) return true;
        if (std::chrono::steady_clock::now() >= deadline) return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
}

long helper_process::field(const std::string& name) const
{
    const auto text = word(name);
    return text.empty() ? -1 : std::stol(text);
}

std::string helper_process::word(const std::string& name) const
{
    const auto text = output();
    // At the start of a word: "loads_here=" must not match "other_loads_here=".
    for (auto at = text.find(name + "="); at != std::string::npos; at = text.find(name + "=", at + 1)) {
        if (at > 0 && text[at - 1] != ' ' && text[at - 1] != '\n') continue;
        const auto begin = at + name.size() + 1;
        return text.substr(begin, text.find_first_of(" \n", begin) - begin);
    }
    return "";
}

std::string unix_ms_in(std::chrono::milliseconds delay)
{
    const auto at = std::chrono::system_clock::now() + delay;
    return std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(at.time_since_epoch()).count());
}

}  // namespace redlock::test
