// A Bloom filter kept in one Redis string (SETBIT/GETBIT): which keys may exist, so a cache rejects the others
// before it asks the source. doc/cache.md#bloom-filter.
#pragma once

#include <redlock/diagnostics.hpp>
#include <redlock/error.hpp>
#include <redlock/redis.hpp>
#include <redlock/request.hpp>
#include <redlock/response.hpp>

#include <boost/asio/async_result.hpp>
#include <boost/asio/compose.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/post.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

namespace redlock {

namespace detail {
struct bloom_exchange {
    std::string routing_key;  // the bitmap's name
    request req;
    response resp;
};
/// The request that adds (or tests) `items`, or null when the filter or the items are invalid.
std::unique_ptr<bloom_exchange> bloom_request(const std::string& name, std::uint64_t bits, std::uint32_t hashes,
                                              const std::vector<std::string>& items, bool add);
/// The filter's reply: how many items were new (add), or which are present (test).
error_code bloom_added(const response& resp, std::uint64_t& added);
error_code bloom_present(const response& resp, std::size_t items, std::vector<bool>& present, bool& missing);
void report_missing_filter(diagnostics& diag, const std::string& name);

template <class Result>
struct bloom_op {
    redis store;
    std::unique_ptr<bloom_exchange> io;  // stays put while the op moves: the store keeps references to it
    std::size_t items;
    diagnostics* diag = nullptr;  // told when the filter is missing
    bool started = false;

    template <class Self>
    void operator()(Self& self, error_code ec = {})
    {
        if (!started) {
            started = true;
            if (!io) return boost::asio::post(std::move(self));
            // Named first: the handler is built from `self` (moving `store` and `io`) before the call runs.
            const redis s = store;
            bloom_exchange& x = *io;
            return s.async_exec(x.req, x.resp, x.routing_key, std::move(self));
        }
        Result result{};
        if (!io) return self.complete(make_error_code(error::invalid_argument), std::move(result));
        if (!ec || ec == error::server_error) {
            if constexpr (std::is_same_v<Result, std::uint64_t>) {
                ec = bloom_added(io->resp, result);
            } else {
                bool missing = false;
                ec = bloom_present(io->resp, items, result, missing);
                if (missing && diag) report_missing_filter(*diag, io->routing_key);
            }
        }
        self.complete(ec, std::move(result));
    }
};
}  // namespace detail

/// A Bloom filter of m bits and k hashes, sized from the number of items it must hold and the false-positive
/// rate wanted at that number (m = -n ln p / (ln 2)^2, k = m / n ln 2). It says "absent" only for items never
/// added (no false negatives) and "present" for an item never added with probability about p once n items
/// are in; past n the rate climbs. Items cannot be removed.
/// Keys: the bitmap is the key `name` (m bits, at most 2^32: 512 MB); its shape is kept beside it in
/// `{name}:bloom` (redlock::aux_name). The first add stores the shape; a filter of another size or hash count
/// on the same name is refused (error::server_error, with the stored shape in the reply) rather than mixing
/// two layouts (changing the size breaks the members already in). Neither key expires.
/// Hashing: MurmurHash3 x64 128 of the item's bytes gives h1, h2; bit i (0 <= i < k) is
/// (h1 mod m + i * s) mod m with s = h2 mod m (1 if that is 0): another language can share the filter.
/// A cheap handle: copies share the store (a `redis`, one deployment). Thread safety: every member may be called
/// from any thread.
class bloom_filter {
public:
    /// No I/O. Invalid arguments (an empty name, expected_items 0, a rate outside (0, 1), or more than 2^32 bits)
    /// make every operation fail with error::invalid_argument (posted, before any I/O).
    bloom_filter(redis store, std::string name, std::uint64_t expected_items, double false_positive_rate);

    const std::string& name() const noexcept { return name_; }
    /// m and k, or 0 when the arguments were invalid.
    std::uint64_t bits() const noexcept { return bits_; }
    std::uint32_t hashes() const noexcept { return hashes_; }
    std::uint64_t expected_items() const noexcept { return expected_items_; }
    double false_positive_rate() const noexcept { return false_positive_rate_; }
    /// The rate predicted with `items` distinct items in: (1 - e^(-k n / m))^k.
    double predicted_rate(std::uint64_t items) const noexcept;

    /// Adds `items` (one script call: SETBIT of each item's k bits). Completes with how many of them were new
    /// (at least one of their bits was unset; an item whose bits were all set by others counts as not new).
    /// Signature: void(error_code, std::uint64_t). Errors: the store's (redis::async_exec), error::server_error
    /// for a filter of another shape on this name, invalid_argument (no items, or an invalid filter). Cancellation:
    /// as redis::async_exec (the store's request). Lifetime: the arguments are copied. Completes on the handler's
    /// associated executor (the store's executor for a handler without one), never inline.
    template <boost::asio::completion_token_for<void(error_code, std::uint64_t)> Token = boost::asio::deferred_t>
    auto async_add(std::vector<std::string> items, Token&& token = {}) const
    {
        return start<std::uint64_t>(items, true, nullptr, std::forward<Token>(token));
    }

    /// Whether each of `items` may be in (GETBIT of its k bits, in one script call, stopping at the first unset
    /// bit). Signature: void(error_code, std::vector<bool>), one answer per item. Errors, cancellation and
    /// lifetime: as async_add. A filter that does not exist on the store (nothing added yet, or lost to a
    /// FLUSHDB, a restart without persistence or an eviction) can rule nothing out: every item reads as maybe
    /// present (true), and the overload with `diag` says so in diag.client_message() (empty otherwise).
    template <boost::asio::completion_token_for<void(error_code, std::vector<bool>)> Token = boost::asio::deferred_t>
    auto async_contains(std::vector<std::string> items, Token&& token = {}) const
    {
        return start<std::vector<bool>>(items, false, nullptr, std::forward<Token>(token));
    }
    template <boost::asio::completion_token_for<void(error_code, std::vector<bool>)> Token = boost::asio::deferred_t>
    auto async_contains(std::vector<std::string> items, diagnostics& diag, Token&& token = {}) const
    {
        diag.clear();
        return start<std::vector<bool>>(items, false, &diag, std::forward<Token>(token));
    }

private:
    template <class Result, class Token>
    auto start(const std::vector<std::string>& items, bool add, diagnostics* diag, Token&& token) const
    {
        return boost::asio::async_compose<Token, void(error_code, Result)>(
            detail::bloom_op<Result>{store_, detail::bloom_request(name_, bits_, hashes_, items, add), items.size(),
                                     diag},
            token, store_.get_executor());
    }

    redis store_;
    std::string name_;
    std::uint64_t expected_items_;
    double false_positive_rate_;
    std::uint64_t bits_ = 0;
    std::uint32_t hashes_ = 0;
};

}  // namespace redlock
