#include <cerrno>
#include <common/processes/subprocess.hpp>
#include <cstdlib>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <poll.h>
#include <signal.h>
#include <sstream>
#include <stdexcept>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <system_error>
#include <thread>
#include <unistd.h>

extern char** environ;

namespace redlock::test {
namespace {

using std::chrono::milliseconds;
using std::chrono::steady_clock;

std::vector<char*> pointers(const std::vector<std::string>& strings)
{
    std::vector<char*> result;
    result.reserve(strings.size() + 1);
    for (const auto& s : strings) result.push_back(const_cast<char*>(s.c_str()));
    result.push_back(nullptr);
    return result;
}

// Between fork and execve only async-signal-safe calls: everything is prepared beforehand.
[[noreturn]] void exec_child(pid_t parent, const char* path, char* const* argv, char* const* envp, int out_fd,
                             int err_fd)
{
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127);  // the parent died before prctl took effect

    sigset_t all;
    sigemptyset(&all);
    sigprocmask(SIG_SETMASK, &all, nullptr);

    int in_fd = open("/dev/null", O_RDONLY);
    if (in_fd < 0 || dup2(in_fd, 0) < 0 || dup2(out_fd, 1) < 0 || dup2(err_fd, 2) < 0) _exit(127);
    // Descriptors inherited from the test (say a fault proxy's listener) would outlive their owner.
    if (syscall(SYS_close_range, 3U, ~0U, 0U) != 0) {
        for (int fd = 3; fd < 4096; ++fd) close(fd);
    }
    execve(path, argv, envp);
    _exit(127);
}

int open_output(const std::string& file)
{
    int fd = open(file.empty() ? "/dev/null" : file.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0) throw std::system_error(errno, std::generic_category(), "open " + file);
    return fd;
}

// The directories make_temp_dir made, removed at exit (a static's destructor).
class temp_dirs {
public:
    static temp_dirs& get()
    {
        static temp_dirs dirs;
        return dirs;
    }

    void add(const std::string& dir)
    {
        std::lock_guard lock(mutex_);
        dirs_.push_back(dir);
    }

    ~temp_dirs()
    {
        // A forked child that exits normally must not remove its parent's directories.
        if (getpid() != owner_ || std::getenv("REDLOCK_TEST_KEEP_TEMP") != nullptr) return;
        std::error_code ignored;
        for (const auto& dir : dirs_) std::filesystem::remove_all(dir, ignored);
    }

private:
    const pid_t owner_ = getpid();
    std::mutex mutex_;
    std::vector<std::string> dirs_;
};

}  // namespace

std::string find_executable(const std::string& name, const char* env_override)
{
    if (env_override != nullptr) {
        if (const char* path = std::getenv(env_override); path != nullptr && *path != '\0') return path;
    }
    const char* path = std::getenv("PATH");
    std::string dirs = path != nullptr ? path : "/usr/local/bin:/usr/bin:/bin";
    std::size_t begin = 0;
    while (begin <= dirs.size()) {
        std::size_t end = dirs.find(':', begin);
        if (end == std::string::npos) end = dirs.size();
        std::string candidate = (end > begin ? dirs.substr(begin, end - begin) : ".") + "/" + name;
        if (access(candidate.c_str(), X_OK) == 0) return candidate;
        begin = end + 1;
    }
    throw std::runtime_error("cannot find '" + name + "' on PATH");
}

std::vector<std::string> environment_with(const std::vector<std::string>& set)
{
    std::vector<std::string> result;
    auto overridden = [&](const std::string& entry) {
        for (const auto& s : set) {
            auto eq = s.find('=');
            if (entry.compare(0, eq + 1, s, 0, eq + 1) == 0) return true;
        }
        return false;
    };
    for (char** e = environ; *e != nullptr; ++e) {
        if (!overridden(*e)) result.emplace_back(*e);
    }
    result.insert(result.end(), set.begin(), set.end());
    return result;
}

pid_t spawn_process(const spawn_options& options)
{
    auto argv = pointers(options.args);
    auto envp = pointers(options.env);
    int out_fd = open_output(options.output_file);
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid == 0) exec_child(parent, options.args.at(0).c_str(), argv.data(), envp.data(), out_fd, out_fd);
    int saved = errno;
    close(out_fd);
    if (pid < 0) throw std::system_error(saved, std::generic_category(), "fork");
    return pid;
}

std::string make_temp_dir(const std::string& prefix)
{
    std::string pattern = (std::filesystem::temp_directory_path() / (prefix + "XXXXXX")).string();
    if (mkdtemp(pattern.data()) == nullptr) {
        throw std::system_error(errno, std::generic_category(), "mkdtemp " + pattern);
    }
    temp_dirs::get().add(pattern);
    return pattern;
}

bool wait_for_exit(pid_t pid, milliseconds timeout, int* status)
{
    auto deadline = steady_clock::now() + timeout;
    for (;;) {
        int st = 0;
        pid_t r = waitpid(pid, &st, WNOHANG);
        if (r == pid || (r < 0 && errno == ECHILD)) {
            if (status != nullptr) *status = st;
            return true;
        }
        if (steady_clock::now() >= deadline) return false;
        std::this_thread::sleep_for(milliseconds(1));
    }
}

void stop_process(pid_t pid, milliseconds grace) noexcept
{
    if (pid <= 0) return;
    ::kill(pid, SIGCONT);  // a stopped process keeps SIGTERM pending
    ::kill(pid, SIGTERM);
    if (wait_for_exit(pid, grace)) return;
    ::kill(pid, SIGKILL);
    while (waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
    }
}

command_result run_command(const std::vector<std::string>& args, milliseconds timeout)
{
    int out_pipe[2];
    int err_pipe[2];
    if (pipe2(out_pipe, O_CLOEXEC) != 0) throw std::system_error(errno, std::generic_category(), "pipe");
    if (pipe2(err_pipe, O_CLOEXEC) != 0) {
        int saved = errno;
        close(out_pipe[0]);
        close(out_pipe[1]);
        throw std::system_error(saved, std::generic_category(), "pipe");
    }
    auto argv = pointers(args);
    auto env = environment_with({});
    auto envp = pointers(env);
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid == 0) exec_child(parent, args.at(0).c_str(), argv.data(), envp.data(), out_pipe[1], err_pipe[1]);
    int saved = errno;
    close(out_pipe[1]);
    close(err_pipe[1]);
    if (pid < 0) {
        close(out_pipe[0]);
        close(err_pipe[0]);
        throw std::system_error(saved, std::generic_category(), "fork");
    }

    command_result result;
    pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
    std::string* sinks[2] = {&result.out, &result.err};
    int open_count = 2;
    auto deadline = steady_clock::now() + timeout;
    bool timed_out = false;
    while (open_count > 0) {
        auto left = std::chrono::duration_cast<milliseconds>(deadline - steady_clock::now()).count();
        if (left <= 0) {
            timed_out = true;
            break;
        }
        int n = poll(fds, 2, static_cast<int>(left));
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) break;
        for (int i = 0; i < 2; ++i) {
            if (fds[i].fd < 0 || fds[i].revents == 0) continue;
            char buffer[4096];
            ssize_t got = read(fds[i].fd, buffer, sizeof buffer);
            if (got > 0) {
                sinks[i]->append(buffer, static_cast<std::size_t>(got));
            } else if (got == 0 || errno != EINTR) {
                close(fds[i].fd);
                fds[i].fd = -1;
                --open_count;
            }
        }
    }
    for (auto& fd : fds) {
        if (fd.fd >= 0) close(fd.fd);
    }
    if (timed_out) ::kill(pid, SIGKILL);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (timed_out) {
        throw std::runtime_error("command timed out after " + std::to_string(timeout.count()) + " ms: " + args.at(0));
    }
    result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    return result;
}

int exit_status(int wait_status) noexcept
{
    return WIFEXITED(wait_status) ? WEXITSTATUS(wait_status) : 128 + WTERMSIG(wait_status);
}

std::string file_contents(const std::string& path)
{
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
}

std::string comma_joined(const std::vector<std::string>& parts)
{
    std::string out;
    for (const auto& p : parts) out += (out.empty() ? "" : ",") + p;
    return out;
}

}  // namespace redlock::test
