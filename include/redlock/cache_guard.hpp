// Cache-stampede protection for values kept in Redis: get_or_load returns a cached value, or runs one loader
// across every process on a miss (single flight in each process, a fenced rebuild lock across them); null
// caching, a Bloom filter of known keys, TTL jitter, logical expiry and XFetch early refresh. doc/cache.md.
#pragma once

#include <redlock/bloom_filter.hpp>
#include <redlock/client.hpp>
#include <redlock/diagnostics.hpp>
#include <redlock/error.hpp>
#include <redlock/lock_options.hpp>
#include <redlock/redis.hpp>

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/compose.hpp>
#include <boost/asio/deferred.hpp>

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>

namespace redlock {

/// What get_or_load runs on a miss: a coroutine that reads the source and returns the value's bytes, or nullopt
/// for "does not exist" (cached as a null marker). It reports failure by throwing: a
/// boost::system::system_error reaches every waiter of this process as its error_code, anything else as
/// error::load_failed with what() in the diagnostics. An error is not cached: a waiting process takes the rebuild
/// lock next and runs its own loader (doc/cache.md, "Costs"). It runs on the guard's strand, and is cancelled
/// (terminal) when its load is abandoned, times out or loses its rebuild lock. The guard keeps the callable alive until
/// its coroutine returns, so a capturing lambda is fine, but it may run on after its own caller left (others still wait
/// for it): capture by value, never the caller's locals by reference.
using cache_loader = std::function<boost::asio::awaitable<std::optional<std::string>>()>;

/// How get_or_load keeps values: their TTLs, null caching, jitter, background refresh, the load's deadline and the
/// rebuild lock. An aggregate for designated initializers; bad values fail each call with invalid_argument.
struct cache_options {
    /// Every duration of the options.
    using ms = std::chrono::milliseconds;

    /// How long a loaded value stays in the store (its PX), before jitter. In (0, lock_options::max_ttl].
    ms ttl{60'000};
    /// Logical expiry: once a value is this old (before jitter), a read still returns it at once but starts one
    /// refresh in the background (one per key across processes: the refresh takes the rebuild lock without
    /// waiting). 0: off. Below ttl; ttl - soft_ttl is how long a stale value may be served while refreshes fail.
    ms soft_ttl{0};
    /// How long "does not exist" (the loader returned nullopt) is remembered: a null marker. 0: not cached.
    ms null_ttl{5'000};
    /// Every TTL is multiplied by a factor uniform in [1 - ttl_jitter, 1 + ttl_jitter], so values loaded
    /// together do not expire together (avalanche). In [0, 1).
    double ttl_jitter = 0.1;
    /// XFetch early refresh (beta > 0; 1 is the paper's default, larger refreshes earlier): a read refreshes a
    /// value in the background before it expires (its soft expiry, else its ttl) with probability
    /// e^(-time left / (beta * delta)), delta being how long its load took. 0: off.
    double xfetch_beta = 0;
    /// Deadline of one load: past it the loader is cancelled and its waiters fail with error::timeout.
    ms load_timeout{10'000};
    /// The rebuild lock (one per key: `{key}:rebuild`). `wait` bounds how long a miss waits for another
    /// process's load; `ttl` is the lease the watchdog keeps alive while the loader runs. The guard always turns
    /// `fencing` and `watchdog` on; `fair` and multi-key forms are not used.
    lock_options lock{.ttl = ms{10'000}, .wait = ms{15'000}};
};
// Written as temporaries inside co_await expressions: keep it trivially destructible (see lock_options).
static_assert(std::is_trivially_destructible_v<cache_options>);

namespace detail {
class cache_guard_impl;
using cache_handler = boost::asio::any_completion_handler<void(error_code, std::optional<std::string>)>;
void start_get_or_load(const std::shared_ptr<cache_guard_impl>& impl, std::string key, cache_loader loader,
                       const cache_options& options, diagnostics* diag, cache_handler handler);
template <class Codec, class Loader>
boost::asio::awaitable<std::optional<std::string>> encode_loaded(Loader loader);
template <class Codec>
struct decode_op;
}  // namespace detail

/// The values live in one Redis deployment (`store`, a `redis`; it may be the server of one of the lock nodes); the
/// rebuild locks run on the client's N nodes (Redlock). A cheap handle: copies share one single-flight table,
/// and the guard, its copies and every operation share ownership of the client's state and the store, so none of
/// them needs to outlive the others (keep the io_context running for loads still under way).
/// Thread safety: every member may be called from any thread; the guard's work runs on its own strand (a strand of
/// the store's executor).
class cache_guard {
public:
    /// No I/O. `known_keys` (optional): a Bloom filter of every key that exists; a miss on a key it does not
    /// contain completes with nullopt without taking a lock or running the loader (fill it as you create items).
    cache_guard(const client& locks, redis store, cache_options defaults = {});
    cache_guard(const client& locks, redis store, bloom_filter known_keys, cache_options defaults = {});

    const cache_options& options() const noexcept { return options_; }

    /// The value of `key` (the Redis key, exactly), loading it on a miss:
    /// - a hit is one GET: the value, or nullopt for a null marker; with logical expiry or XFetch a read may
    ///   also start one refresh in the background and returns the value it found at once;
    /// - a miss (nothing stored, or bytes not in the guard's format) joins this process's load of the key, or
    ///   starts one: the Bloom filter (if any) may answer nullopt; else the load takes the rebuild lock (waiting
    ///   by release message for another process's load), reads again (that load may have written), and only
    ///   then runs `loader` (bounded by load_timeout and by the lock: lost, it is cancelled), writes its result
    ///   with the lock's fencing token (a write with a lower token than the stored value's is refused, and the
    ///   newer value is returned) and releases the lock. Callers joining a load share its outcome; their own
    ///   `loader` and `options` are not used (the first caller's load_timeout and TTLs apply).
    /// Completes with the value, nullopt (known not to exist), or an error: the loader's (see cache_loader),
    /// error::timeout (load_timeout), error::lost (the rebuild lock was lost during the load), not_acquired (the
    /// lock's wait ran out and nothing was written meanwhile), the lock's and the store's errors,
    /// invalid_argument (empty key, no loader, bad options; before any I/O), operation_aborted (cancelled).
    /// Errors are not cached: the next miss loads again.
    /// Signature: void(error_code, std::optional<std::string>). Cancellation: terminal, partial and total; the
    /// caller leaves at once (a read in progress is abandoned, as connection::async_exec abandons it; a node that
    /// ignores cancellation answers within its request timeout); the load goes on for the other waiters, and is
    /// cancelled (its lock released) when its last waiter leaves.
    /// Lifetime: key, loader and options are copied; `diag` must outlive the operation.
    template <
        boost::asio::completion_token_for<void(error_code, std::optional<std::string>)> Token = boost::asio::deferred_t>
    auto async_get_or_load(std::string key, cache_loader loader, const cache_options& options, diagnostics& diag,
                           Token&& token = {})
    {
        return initiate(std::move(key), std::move(loader), options, &diag, std::forward<Token>(token));
    }
    template <
        boost::asio::completion_token_for<void(error_code, std::optional<std::string>)> Token = boost::asio::deferred_t>
    auto async_get_or_load(std::string key, cache_loader loader, const cache_options& options, Token&& token = {})
    {
        return initiate(std::move(key), std::move(loader), options, nullptr, std::forward<Token>(token));
    }
    template <
        boost::asio::completion_token_for<void(error_code, std::optional<std::string>)> Token = boost::asio::deferred_t>
    auto async_get_or_load(std::string key, cache_loader loader, Token&& token = {})
    {
        return initiate(std::move(key), std::move(loader), options_, nullptr, std::forward<Token>(token));
    }

    /// As async_get_or_load, for a structured value: `loader` returns awaitable<optional<T>>, and
    /// `Codec::encode(const T&) -> std::string` and `Codec::decode(std::string_view) -> std::optional<T>`
    /// (nullopt: unreadable bytes) turn it into the stored bytes and back; `Codec::value_type` is T. Bytes the
    /// codec cannot read complete with error::protocol_error. Signature: void(error_code, std::optional<T>).
    /// Cancellation and lifetime: as async_get_or_load.
    template <class Codec, class Loader,
              boost::asio::completion_token_for<void(error_code, std::optional<typename Codec::value_type>)> Token =
                  boost::asio::deferred_t>
    auto async_get_or_load_as(std::string key, Loader loader, const cache_options& options, Token&& token = {})
    {
        cache_loader bytes = [typed = std::move(loader)] { return detail::encode_loaded<Codec>(typed); };
        return boost::asio::async_compose<Token, void(error_code, std::optional<typename Codec::value_type>)>(
            detail::decode_op<Codec>{impl_, std::move(key), std::move(bytes), options}, token);
    }

private:
    template <class Token>
    auto initiate(std::string key, cache_loader loader, const cache_options& options, diagnostics* diag, Token&& token)
    {
        return boost::asio::async_initiate<Token, void(error_code, std::optional<std::string>)>(
            [impl = impl_, options, diag](auto handler, std::string k, cache_loader l) {
                detail::start_get_or_load(impl, std::move(k), std::move(l), options, diag, std::move(handler));
            },
            token, std::move(key), std::move(loader));
    }

    std::shared_ptr<detail::cache_guard_impl> impl_;
    cache_options options_;
};

namespace detail {

template <class Codec, class Loader>
boost::asio::awaitable<std::optional<std::string>> encode_loaded(Loader loader)
{
    auto value = co_await loader();
    if (!value) co_return std::nullopt;
    co_return Codec::encode(*value);
}

template <class Codec>
struct decode_op {
    std::shared_ptr<cache_guard_impl> impl;
    std::string key;
    cache_loader loader;
    cache_options options;

    template <class Self>
    void operator()(Self& self)
    {
        self.reset_cancellation_state(boost::asio::enable_total_cancellation());  // as async_get_or_load: any type
        // Taken out first: the handler is built from `self` (moving these members) before the call runs.
        auto guard = std::move(impl);
        auto k = std::move(key);
        auto l = std::move(loader);
        const auto o = options;
        start_get_or_load(guard, std::move(k), std::move(l), o, nullptr, std::move(self));
    }
    template <class Self>
    void operator()(Self& self, error_code ec, std::optional<std::string> bytes)
    {
        std::optional<typename Codec::value_type> value;
        if (!ec && bytes) {
            value = Codec::decode(std::string_view(*bytes));
            if (!value) ec = make_error_code(error::protocol_error);
        }
        self.complete(ec, std::move(value));
    }
};

}  // namespace detail

}  // namespace redlock
