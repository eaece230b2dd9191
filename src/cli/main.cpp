// The `redlock` command-line tool: dispatches to exec, throttle, status and bench.
#include "child.hpp"
#include "commands.hpp"
#include "exit_codes.hpp"
#include "options.hpp"
#include "output.hpp"

#include <exception>
#include <string>
#include <vector>

namespace {

using namespace redlock::cli;

int dispatch(const std::string& command, const std::vector<std::string>& args)
{
    if (command == "exec") {
        auto o = parse_exec(args);
        return o ? run_exec(*o) : exit_code::ok;
    }
    if (command == "status") {
        auto o = parse_status(args);
        return o ? run_status(*o) : exit_code::ok;
    }
    if (command == "throttle") {
        auto o = parse_throttle(args);
        return o ? run_throttle(*o) : exit_code::ok;
    }
    if (command == "bench") {
        auto o = parse_bench(args);
        return o ? run_bench(*o) : exit_code::ok;
    }
    if (command == "help" || command == "--help" || command == "-h") {
        write_stdout(general_usage());
        return exit_code::ok;
    }
    throw usage_error("unknown command '" + command + "' (exec, throttle, status, bench or help)");
}

}  // namespace

int main(int argc, char** argv)
{
    // First: the descriptors the caller gave us are the command's too; later ones are ours alone.
    remember_inherited_fds();
    if (argc < 2) {
        write_stderr("redlock: no command given\n" + general_usage());
        return exit_code::usage;
    }
    const std::string command = argv[1];
    const std::vector<std::string> args(argv + 2, argv + argc);
    try {
        return dispatch(command, args);
    } catch (const usage_error& e) {
        std::string text = "redlock: ";
        if (!e.command().empty()) text += e.command() + ": ";
        text += e.what();
        text += "\n";
        text += e.command().empty() ? "Try 'redlock help'.\n" : "Try 'redlock " + e.command() + " --help'.\n";
        write_stderr(text);
        return exit_code::usage;
    } catch (const std::exception& e) {
        write_stderr(std::string("redlock: internal error: ") + e.what() + "\n");
        return exit_code::lost;
    }
}
