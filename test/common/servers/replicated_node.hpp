// A master with replicas (redis-server --replicaof): the node of replica acknowledgement tests (WAIT). The
// replicas are linked (master_link_status:up, and the master counts them) when the constructor returns.
#pragma once

#include <chrono>
#include <common/servers/redis_node.hpp>
#include <cstddef>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace redlock::test {

class replicated_node {
    static node_options with_args(std::vector<std::string> args)
    {
        node_options o;
        o.extra_args = std::move(args);
        return o;
    }

public:
    /// A master and `replicas` replicas of it, linked within 10 s (or throws with the first replica's log).
    explicit replicated_node(std::size_t replicas = 1)
        // A full sync starts at once rather than after the diskless sync's default 5 s delay.
        : master(with_args({"--repl-diskless-sync-delay", "0"}))
    {
        for (std::size_t i = 0; i < replicas; ++i)
            this->replicas.push_back(
                std::make_unique<redis_node>(with_args({"--replicaof", "127.0.0.1", std::to_string(master.port())})));
        wait_linked();
    }

    redis_node master;
    std::vector<std::unique_ptr<redis_node>> replicas;

    redis_node& replica(std::size_t i = 0) { return *replicas.at(i); }

    /// The rest of the line of INFO that starts with `name`, or "".
    static std::string field(const std::string& info, const std::string& name)
    {
        auto at = info.find(name);
        if (at == std::string::npos) return {};
        at += name.size();
        return info.substr(at, info.find_first_of("\r\n", at) - at);
    }

    /// Waits until every replica's link is up and it acknowledges the master's writes: a WAIT for them all returns
    /// their number, and the master reports each past the offset of its full sync. (After a diskless full sync the
    /// master streams nothing to a replica until its first REPLCONF ACK, sent once a second: a replica whose link reads
    /// "up" may not acknowledge anything for up to a second.)
    void wait_linked(std::chrono::milliseconds limit = std::chrono::seconds(10))
    {
        const auto until = std::chrono::steady_clock::now() + limit;
        const auto linked = [&] {
            for (const auto& r : replicas)
                if (r->cli({"INFO", "replication"}).find("master_link_status:up") == std::string::npos) return false;
            master.cli({"SET", "replicated_node:probe", "1"});
            const auto n = std::to_string(replicas.size());
            if (master.cli({"WAIT", n, "100"}) != n) return false;
            // Streaming: each replica acknowledged a write (offset 0 is its full sync's, with no write after it).
            const auto info = master.cli({"INFO", "replication"});
            for (std::size_t i = 0; i < replicas.size(); ++i) {
                const auto line = field(info, "slave" + std::to_string(i) + ":");
                if (line.find("state=online") == std::string::npos || line.find(",offset=0,") != std::string::npos)
                    return false;
            }
            return true;
        };
        while (!linked()) {  // a probe write each time: it moves the offset the replicas must reach
            if (std::chrono::steady_clock::now() >= until)
                throw std::runtime_error("the replicas did not link to their master in time: " +
                                         (replicas.empty() ? std::string() : replicas.front()->log_tail()));
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
        }
    }
};

}  // namespace redlock::test
