#include "cli/common/command_env.hpp"

#include <algorithm>

extern char** environ;

namespace redlock::cli {

std::vector<std::string> inherited_environment()
{
    std::vector<std::string> env;
    for (char** e = environ; *e != nullptr; ++e) {
        const std::string_view entry(*e);
        const auto ours = std::any_of(command_variables.begin(), command_variables.end(), [&](std::string_view name) {
            return entry.size() > name.size() && entry.starts_with(name) && entry[name.size()] == '=';
        });
        if (!ours) env.emplace_back(entry);
    }
    return env;
}

}  // namespace redlock::cli
