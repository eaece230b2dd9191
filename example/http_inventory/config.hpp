// The service's settings and the command line that sets them.
#pragma once

#include <redlock/node_config.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace http_inventory {

using ms = std::chrono::milliseconds;

struct config {
    std::string listen_host = "127.0.0.1";
    std::uint16_t listen_port = 8080;              ///< 0: any free port (the bound one is printed at start)
    std::vector<redlock::node_config> lock_nodes;  ///< the N Redlock nodes of the per-item locks
    std::string store;                             ///< the Redis that keeps the stock, the orders and the rate limits

    /// Per client (API key, else peer address): `rate` requests per `rate_period`, `burst` more at once.
    /// rate 0 turns limiting off.
    std::int64_t rate = 20;
    ms rate_period{1000};
    std::int64_t burst = 40;

    ms lock_ttl{2000};          ///< the per-item lock's lease; the watchdog extends it while a request holds it
    ms request_timeout{5000};   ///< the whole budget of one request: rate limit, lock wait, store round trips
    ms header_timeout{10'000};  ///< from a request's first byte to its last header byte
    ms body_timeout{10'000};
    ms write_timeout{10'000};
    ms idle_timeout{120'000};  ///< a keep-alive connection with no request in flight
    ms drain_timeout{20'000};  ///< after SIGTERM, how long in-flight requests may take before they are cancelled
    ms shutdown_delay{0};      ///< after SIGTERM, how long to keep accepting while /readyz says 503 (load balancers)
    std::uint32_t header_limit = 8 * 1024;
    std::uint64_t body_limit = 4 * 1024;
    std::size_t max_connections = 10'000;
};

/// A command line that cannot be used; what() says why.
struct config_error : std::invalid_argument {
    using std::invalid_argument::invalid_argument;
};

/// Reads `--flag value` and `--flag=value` arguments (without the program name). `env_nodes` is
/// $REDLOCK_NODES, used when --nodes is absent. Throws config_error.
config parse_config(const std::vector<std::string_view>& args, const char* env_nodes);

/// "500ms", "10s", "2m"; a bare number is milliseconds. Throws config_error.
ms parse_duration(std::string_view text);

/// The flags and their defaults, for --help.
std::string usage();

}  // namespace http_inventory
