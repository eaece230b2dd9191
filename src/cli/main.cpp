// The `redlock` command-line tool: dispatches to its subcommands, one folder each (exec, elect, throttle, status,
// bench).
#include "cli/bench/bench.hpp"
#include "cli/common/child.hpp"
#include "cli/common/command_line.hpp"
#include "cli/common/exit_codes.hpp"
#include "cli/common/output.hpp"
#include "cli/elect/elect.hpp"
#include "cli/exec/exec.hpp"
#include "cli/status/status.hpp"
#include "cli/throttle/throttle.hpp"

#include <algorithm>
#include <array>
#include <exception>
#include <string>
#include <string_view>
#include <vector>

namespace {

using namespace redlock::cli;

// The overview printed by `redlock help` and on a missing subcommand.
constexpr std::string_view general_help = R"(usage: redlock <command> [options]

commands:
  exec [options] -- COMMAND [ARG...]   run COMMAND under a distributed lock
  elect --key NAME -- COMMAND [ARG...] run COMMAND while leading an election (--listen: print its leaders)
  throttle --key NAME --rate N/PERIOD [-- COMMAND [ARG...]]
                                       wait for room in a rate limiter, then run COMMAND
  status --key NAME                    who holds a lock or a semaphore, remaining TTL per node
  bench [--scenario ...]               lock, semaphore, limiter and cache latency and throughput of a deployment
  help [COMMAND]                       this text, or COMMAND's
  --version                            the version of redlock

'redlock <command> --help' (or 'redlock help <command>') describes each command. Nodes come from
--nodes URL[,URL...], else $REDLOCK_NODES, else redis://127.0.0.1:6379.
)";

int dispatch(const std::string& name, const std::vector<std::string>& args)
{
    const std::array commands{exec_command(), elect_command(), throttle_command(), status_command(), bench_command()};
    auto find = [&](std::string_view wanted) {
        auto it = std::find_if(commands.begin(), commands.end(), [&](const subcommand& c) { return c.name == wanted; });
        if (it == commands.end())
            throw usage_error("unknown command '" + std::string(wanted) +
                              "' (exec, elect, throttle, status, bench or help)");
        return *it;
    };
    if (name == "--version" || name == "version") {
        if (!args.empty()) throw usage_error("--version takes no arguments");
        write_stdout("redlock " REDLOCK_VERSION "\n");
        return exit_code::ok;
    }
    if (name == "help" || name == "--help" || name == "-h") {
        if (args.size() > 1) throw usage_error("help: one command at most, as in: redlock help exec");
        write_stdout(args.empty() ? general_help : find(args.front()).help);
        return exit_code::ok;
    }
    return find(name).run(args);
}

}  // namespace

int main(int argc, char** argv)
{
    // First: the descriptors the caller gave us are the command's too; later ones are ours alone.
    remember_inherited_fds();
    if (argc < 2) {
        write_stderr("redlock: no command given\n" + std::string(general_help));
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
