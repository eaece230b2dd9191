#include "cli/status/cluster_shard.hpp"

#include <redlock/redis.hpp>

#include <boost/asio/io_context.hpp>

#include <memory>
#include <sstream>

namespace redlock::cli {
namespace {

// The address of the CLUSTER NODES line flagged "myself" (`<id> <ip:port@bus[,hostname]> <flags> ...`).
std::string myself_address(const std::string& nodes)
{
    std::istringstream lines(nodes);
    std::string line;
    while (std::getline(lines, line)) {
        std::istringstream fields(line);
        std::string id, address, flags;
        fields >> id >> address >> flags;
        if (flags.find("myself") == std::string::npos) continue;
        return address.substr(0, address.find_first_of("@,"));
    }
    return {};
}

struct shard_query {
    shard_query(boost::asio::io_context& ctx, const node_config& config) : store(ctx.get_executor(), config) {}
    redis store;
    request req;
    response resp;
    std::string line;
};

}  // namespace

std::vector<std::string> cluster_shard_lines(const std::vector<node_config>& nodes, const std::string& key,
                                             std::chrono::milliseconds deadline)
{
    boost::asio::io_context ctx(1);
    std::vector<std::unique_ptr<shard_query>> queries;
    for (const auto& config : nodes) {
        if (!config.cluster) continue;
        auto c = config;
        c.request_timeout = deadline;
        auto& q = *queries.emplace_back(std::make_unique<shard_query>(ctx, c));
        q.req.push("CLUSTER", "KEYSLOT", key);
        q.req.push("CLUSTER", "NODES");  // routed by the key: "myself" is the slot's master
        q.line = "  " + config.to_string() + "  ";
        q.store.async_exec(q.req, q.resp, key, [&q](error_code ec) {
            if (ec || q.resp.size() != 2 || q.resp[0].is_error() || q.resp[1].is_error()) {
                const auto* failed = q.resp.empty() ? nullptr : (q.resp[0].is_error() ? &q.resp[0] : &q.resp.back());
                q.line += "slot unknown: " + (failed && failed->is_error() ? failed->text : ec.message());
            } else {
                const auto address = myself_address(q.resp[1].text);
                q.line += "slot " + std::to_string(q.resp[0].as_integer().value_or(-1)) + " on master " +
                          (address.empty() ? std::string("(unknown)") : address);
            }
            q.store.close();
        });
    }
    ctx.run();
    std::vector<std::string> lines;
    for (const auto& q : queries) lines.push_back(q->line);
    return lines;
}

}  // namespace redlock::cli
