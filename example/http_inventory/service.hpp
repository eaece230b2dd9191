// Everything a request handler needs, and the handler: one HTTP request in, its response out.
#pragma once

#include "config.hpp"
#include "inventory.hpp"
#include "metrics.hpp"
#include "readiness.hpp"
#include "replies.hpp"

#include <redlock/client.hpp>
#include <redlock/redis.hpp>

#include <boost/asio/awaitable.hpp>

#include <string>

namespace http_inventory {

/// Made once in main; outlives every session.
struct service {
    const config& cfg;
    redlock::client& locks;  ///< the N lock nodes
    redlock::redis& store;   ///< the store: the stock, the orders and the rate limits (a limiter lives on one Redis)
    inventory& items;
    metrics& stats;
    readiness& probe;
    bool draining = false;  ///< set on SIGTERM: /readyz answers 503, responses say `Connection: close`
};

/// Answers `req`; `client_id` is who the per-client rate limit counts (the API key, else the peer address).
/// Never throws but for a cancellation (the drain's deadline), which ends the session.
boost::asio::awaitable<response> handle(service& s, request req, std::string client_id);

/// The rate limit's subject: a valid X-Api-Key header, else the peer's address.
std::string client_id_of(const request& req, const std::string& peer_address);

}  // namespace http_inventory
