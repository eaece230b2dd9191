// The Lua scripts of the mutex and how their answers count as votes.
#pragma once

#include <redlock/detail/quorum.hpp>
#include <redlock/error.hpp>
#include <redlock/response.hpp>
#include <redlock/script.hpp>

#include <chrono>
#include <optional>

namespace redlock::detail::lock_scripts {

/// KEYS: the lock keys; ARGV: token, ttl in ms. Sets every key to the token with the ttl if none is held by
/// another token (all or none), so acquiring again, or extending, is the same idempotent operation, and an
/// extension re-creates keys a restarted node lost. Returns 1, or -(holder's PTTL) when refused.
const script& acquire();

/// KEYS: the lock keys; ARGV: token. Deletes the keys that hold the token. Returns how many it deleted,
/// or -(how many another token holds).
const script& release();

vote classify_acquire(error_code ec, const response& resp);
vote classify_release(error_code ec, const response& resp);

/// From a refused acquire: how long the holder's key lives on that node.
std::optional<std::chrono::milliseconds> holder_ttl(const response& resp);

}  // namespace redlock::detail::lock_scripts
