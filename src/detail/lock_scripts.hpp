// The Lua scripts of the mutex and how their answers count as votes.
#pragma once

#include <redlock/detail/quorum.hpp>
#include <redlock/error.hpp>
#include <redlock/request.hpp>
#include <redlock/response.hpp>
#include <redlock/script.hpp>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace redlock::detail::lock_scripts {

/// KEYS: the lock keys; ARGV: token, ttl in ms. Sets every key to the token with the ttl if none is held by
/// another token (all or none), so acquiring again, or extending, is the same idempotent operation, and an
/// extension re-creates keys a restarted node lost. Returns 1; when refused, -(holder's PTTL), or 0 if the
/// holder's key has no TTL.
const script& acquire();

/// KEYS: the lock keys; ARGV: token, then the release channel of each key. Deletes the keys that hold the
/// token and publishes the token on their channels, so a waiter retries at once (the same token from N nodes
/// is one release). The token tells nothing new: anyone who may read the key could read it. Returns how many it
/// deleted, or
/// -(how many another token holds).
const script& release();

/// The channel a key's release is published on: in the key's hash slot.
std::string release_channel(const std::string& key);

/// The requests themselves, each with the per-node deadline.
request acquire_request(const std::vector<std::string>& keys, const std::string& token, std::chrono::milliseconds ttl,
                        std::chrono::milliseconds node_timeout);
request release_request(const std::vector<std::string>& keys, const std::string& token,
                        std::chrono::milliseconds node_timeout);

vote classify_acquire(error_code ec, const response& resp);
vote classify_release(error_code ec, const response& resp);

/// From a refused acquire: how long the holder's key lives on that node.
std::optional<std::chrono::milliseconds> holder_ttl(const response& resp);

}  // namespace redlock::detail::lock_scripts
