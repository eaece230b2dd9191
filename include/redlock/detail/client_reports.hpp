// What a recipe built on a client's locks (the cache guard, src/recipes/) reports on that client without reaching
// into its internals: the events it counts in client::stats(), the lines it hands to the client's log handler.
#pragma once

#include <redlock/logging.hpp>

#include <string_view>

namespace redlock::detail {

class client_impl;

/// Counts a cache_guard miss that found its Bloom filter missing (client_stats::bloom_filter_missing). Any thread.
void count_bloom_filter_missing(client_impl& client) noexcept;

/// Hands `message` to the client's log handler (client::set_log_handler), if one is set. Any thread.
void log_on(const client_impl& client, log_level level, std::string_view message);

}  // namespace redlock::detail
