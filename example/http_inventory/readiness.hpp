// /readyz: can this instance reach a quorum of the lock nodes and the store right now, within a probe's budget?
#pragma once

#include <redlock/connection.hpp>
#include <redlock/node_config.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

namespace http_inventory {

/// PINGs every lock node and the store on connections of its own. The lock client cannot answer the question
/// itself: mutex::async_inspect waits for every node (one that is reconnecting, up to its connect timeout), so a
/// probe would time out while a quorum is fine.
class readiness {
public:
    readiness(boost::asio::any_io_executor ex, const std::vector<redlock::node_config>& lock_nodes,
              const redlock::node_config& store);

    /// Starts the connections (they reconnect by themselves).
    void connect();
    void close();

    /// Empty when a quorum of lock nodes and the store answered within `budget`; otherwise why not.
    boost::asio::awaitable<std::string> check(std::chrono::milliseconds budget);

private:
    std::vector<std::unique_ptr<redlock::connection>> lock_nodes_;
    std::unique_ptr<redlock::connection> store_;
};

}  // namespace http_inventory
