// What the nodes ran during a benchmark, from their own counters: CONFIG RESETSTAT before the run, INFO
// commandstats after it (commands a script calls count too). Run alone on the nodes: they count every client.
#pragma once

#include <redlock/node_config.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace redlock::cli {

using command_calls = std::vector<std::pair<std::string, std::uint64_t>>;

/// Zeroes every node's command counters; a node that cannot be reached is skipped.
boost::asio::awaitable<void> reset_server_stats(boost::asio::any_io_executor ex, std::vector<node_config> nodes);

/// Calls per command summed over the nodes, sorted by command, without the benchmark's own bookkeeping
/// (CONFIG, INFO, HELLO, CLIENT, PING).
boost::asio::awaitable<command_calls> server_calls(boost::asio::any_io_executor ex, std::vector<node_config> nodes);

/// Parses INFO commandstats ("cmdstat_evalsha:calls=12,usec=..." lines) into `into`, adding to it.
void add_command_stats(std::string_view info, command_calls& into);

}  // namespace redlock::cli
