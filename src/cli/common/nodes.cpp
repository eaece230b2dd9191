#include "cli/common/command_line.hpp"
#include "cli/common/nodes.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <tuple>

namespace redlock::cli {

std::vector<node_config> node_list(const std::vector<std::string>& flag_values, const std::string& command)
{
    std::string list = default_node;
    std::string source = "--nodes";
    if (!flag_values.empty()) {
        list.clear();
        for (const auto& v : flag_values) list += v + ",";
    } else if (const char* env = std::getenv("REDLOCK_NODES"); env != nullptr && *env != '\0') {
        list = env;
        source = "$REDLOCK_NODES";
    }

    diagnostics diag;
    auto parsed = parse_node_list(list, diag);
    if (!parsed) throw usage_error("bad node URL in " + source + ": " + std::string(diag.client_message()), command);
    auto nodes = *std::move(parsed);
    if (nodes.empty())
        throw usage_error(
            source == "--nodes" ? "--nodes is empty: give at least one node URL" : "$REDLOCK_NODES holds no node URL",
            command);
    for (auto& n : nodes)
        if (n.client_name.empty()) n.client_name = "redlock-cli";

    auto identity = [](const node_config& n) {
        std::string host = n.host;
        std::transform(host.begin(), host.end(), host.begin(),
                       [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
        return std::tuple(host, n.port, n.path, n.db);
    };
    for (std::size_t i = 0; i < nodes.size(); ++i)
        for (std::size_t j = 0; j < i; ++j)
            if (identity(nodes[i]) == identity(nodes[j]))
                throw usage_error("node " + nodes[i].to_string() + " is listed twice in " + source +
                                      ": each node must be an independent Redis master",
                                  command);
    return nodes;
}

}  // namespace redlock::cli
