// The cache guard: a read, a single-flight load under the fenced rebuild lock on a miss, and background
// refreshes (logical expiry, XFetch). Every coroutine here runs on the guard's strand.
#include "common/completion.hpp"
#include "recipes/cache/cache_entry.hpp"
#include "recipes/cache/cache_policy.hpp"
#include "recipes/cache/cache_store.hpp"
#include "recipes/cache/single_flight.hpp"

#include <redlock/cache_guard.hpp>
#include <redlock/detail/access.hpp>
#include <redlock/detail/client_reports.hpp>
#include <redlock/key_layout.hpp>
#include <redlock/lease.hpp>
#include <redlock/mutex.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/experimental/parallel_group.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <cmath>
#include <random>
#include <unordered_map>
#include <unordered_set>

namespace redlock {
namespace detail {

namespace {

namespace asio = boost::asio;
using system_clock = std::chrono::system_clock;
using steady_clock = std::chrono::steady_clock;
using ms = std::chrono::milliseconds;
constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);

using shared_loader = std::shared_ptr<const cache_loader>;

// A miss waits for the load; a refresh serves the old value meanwhile and gives up when another process refreshes.
enum class load_mode { miss, refresh };

std::string rebuild_key(const std::string& key)
{
    return aux_name(key, "rebuild");
}

lock_options rebuild_lock_options(const cache_options& o)
{
    auto lock = o.lock;
    lock.fencing = true;   // the token that fences the value's write
    lock.watchdog = true;  // held as long as the loader runs; lost, the loader is cancelled
    lock.fair = false;
    return lock;
}

std::string invalid_arguments(const std::string& key, const cache_loader& loader, const cache_options& o)
{
    if (key.empty()) return "the cache key is empty";
    if (!loader) return "no loader";
    if (o.ttl <= ms(0) || o.ttl > lock_options::max_ttl) return "ttl must be in (0, 30 days]";
    if (o.soft_ttl < ms(0) || (o.soft_ttl > ms(0) && o.soft_ttl >= o.ttl))
        return "soft_ttl must be 0 (no logical expiry) or below ttl";
    if (o.null_ttl < ms(0) || o.null_ttl > lock_options::max_ttl) return "null_ttl must be in [0, 30 days]";
    if (!(o.ttl_jitter >= 0.0 && o.ttl_jitter < 1.0)) return "ttl_jitter must be in [0, 1)";
    if (!(o.xfetch_beta >= 0.0) || std::isinf(o.xfetch_beta)) return "xfetch_beta must be a finite number >= 0";
    if (o.load_timeout <= ms(0)) return "load_timeout must be positive";
    return rebuild_lock_options(o).invalid();
}

// The value in `stored` (whose entry is `entry`), without copying its bytes; nullopt for a null marker.
std::optional<std::string> value_of(const cache_entry& entry, std::string stored)
{
    if (entry.null) return std::nullopt;
    stored.erase(0, entry.header_size);
    return stored;
}

}  // namespace

class cache_guard_impl : public std::enable_shared_from_this<cache_guard_impl> {
public:
    cache_guard_impl(std::shared_ptr<client_impl> locks, redis store, std::optional<bloom_filter> known)
        : locks_(std::move(locks)),
          store_(std::move(store)),
          known_(std::move(known)),
          strand_(make_strand_of(store_.get_executor())),
          rng_(std::random_device{}())
    {}

    const std::shared_ptr<client_impl>& locks() const noexcept { return locks_; }
    const redis& store() const noexcept { return store_; }
    const std::optional<bloom_filter>& known_keys() const noexcept { return known_; }
    const strand_type& strand() const noexcept { return strand_; }
    asio::any_io_executor io_executor() const noexcept { return store_.get_executor(); }

    /// Uniform in [0, 1). On the strand.
    double unit() { return std::uniform_real_distribution<double>(0.0, 1.0)(rng_); }

    /// This process's load of `key`: the one under way, or a new one. On the strand.
    std::shared_ptr<flight> join_load(const std::string& key, const shared_loader& loader, const cache_options& o);
    /// A miss found the Bloom filter missing: counted every time, logged at most once a minute. On the strand.
    void filter_missing(std::string_view why)
    {
        count_bloom_filter_missing(*locks_);
        const auto now = steady_clock::now();
        if (filter_warned_ && now - *filter_warned_ < std::chrono::minutes(1)) return;
        filter_warned_ = now;
        log_on(*locks_, log_level::warning, std::string(why) + "; rebuild it (doc/cache.md, \"Bloom filter\")");
    }
    /// Refreshes `key` in the background unless this process already does. On the strand.
    void start_refresh(const std::string& key, const shared_loader& loader, const cache_options& o,
                       std::uint64_t seen_token);

private:
    void forget(const std::string& key, const flight& f)
    {
        if (auto it = loads_.find(key); it != loads_.end() && it->second.get() == &f) loads_.erase(it);
    }

    std::shared_ptr<client_impl> locks_;
    redis store_;
    std::optional<bloom_filter> known_;
    strand_type strand_;
    std::minstd_rand rng_;
    std::unordered_map<std::string, std::shared_ptr<flight>> loads_;
    std::unordered_set<std::string> refreshes_;
    std::optional<steady_clock::time_point> filter_warned_;
};

namespace {

// One request on the store, the value's key routing it.
asio::awaitable<error_code> exec(const redis& store, const request& req, response& resp, const std::string& key)
{
    auto [ec] = co_await store.async_exec(req, resp, key, use_tuple);
    if (!ec && resp.size() != 1) ec = make_error_code(error::protocol_error);
    co_return ec;
}

// GET key: what is stored, or nullopt.
asio::awaitable<std::tuple<error_code, std::optional<std::string>>> read_stored(redis store, std::string key)
{
    request req;
    req.push("GET", key);
    response resp;
    const auto ec = co_await exec(store, req, resp, key);
    if (ec) co_return std::tuple{ec, std::optional<std::string>()};
    if (resp[0].is_null()) co_return std::tuple{error_code{}, std::optional<std::string>()};
    co_return std::tuple{error_code{}, std::optional<std::string>(std::move(resp[0].text))};
}

asio::awaitable<std::tuple<error_code, lease>> take_lock(std::shared_ptr<client_impl> locks, std::string key,
                                                         lock_options o, bool one_attempt, diagnostics* diag)
{
    co_return co_await asio::async_initiate<decltype(use_tuple), void(error_code, lease)>(
        [&](auto handler) {
            start_lock(locks, std::vector<std::string>{key}, o, std::string(), one_attempt, diag, std::move(handler));
        },
        use_tuple);
}

// The end of a load, whatever it did: the lock goes back (the cancellation is cleared first, so the release is
// not cancelled with the load; a failed release leaves the lock to its TTL).
asio::awaitable<void> release(lease& held)
{
    co_await asio::this_coro::reset_cancellation_state();
    co_await held.async_release(use_tuple);
}

load_outcome loader_failure(std::exception_ptr e)
{
    try {
        std::rethrow_exception(e);
    } catch (const boost::system::system_error& x) {
        return {x.code(), std::nullopt, std::string("the loader threw: ") + x.what()};
    } catch (const std::exception& x) {
        return {make_error_code(error::load_failed), std::nullopt, std::string("the loader threw: ") + x.what()};
    } catch (...) {
        return {make_error_code(error::load_failed), std::nullopt, "the loader threw something not an exception"};
    }
}

// The loader, run as a coroutine of its own so that a loader ignoring its cancellation cannot hold up its
// waiters: they stop waiting at the deadline, and it is left to finish.
struct loader_run {
    explicit loader_run(const strand_type& strand) : done(strand, steady_clock::time_point::max()) {}
    asio::steady_timer done;  // a condition variable: cancelled when the loader returns
    asio::cancellation_signal stop;
    bool finished = false;
    std::optional<std::string> value;
    std::exception_ptr error;
};

asio::awaitable<std::optional<std::string>> call_loader(shared_loader loader)
{
    co_return co_await (*loader)();
}

bool cancelled(asio::cancellation_state state)
{
    return state.cancelled() != asio::cancellation_type::none;
}

// A load of `key` under its rebuild lock: the steps of cache_guard::async_get_or_load's miss, or of a refresh
// (which tries the lock once, and gives up when the entry changed since `seen_token` was read).
asio::awaitable<load_outcome> load(std::shared_ptr<cache_guard_impl> impl, std::string key, shared_loader loader,
                                   cache_options o, load_mode mode, std::uint64_t seen_token)
{
    // A cancelled load still gives the lock back (release() below): its co_awaits must not throw first. The
    // cancellation is checked where it matters instead: the lock's wait, and before the loader runs.
    co_await asio::this_coro::throw_if_cancelled(false);
    const auto& store = impl->store();
    if (mode == load_mode::miss && impl->known_keys()) {
        std::vector<std::string> items{key};
        diagnostics filter_diag;
        auto [ec, present] = co_await impl->known_keys()->async_contains(std::move(items), filter_diag, use_tuple);
        if (ec) co_return load_outcome{ec, std::nullopt, "the Bloom filter: " + ec.message()};
        // A missing filter rules nothing out (it says so, and only then, in its diagnostics): the key loads.
        if (!filter_diag.client_message().empty()) impl->filter_missing(filter_diag.client_message());
        if (!present.at(0)) co_return load_outcome{};  // known not to exist
    }

    diagnostics lock_diag;
    auto [lock_ec, held] = co_await take_lock(impl->locks(), rebuild_key(key), rebuild_lock_options(o),
                                              mode == load_mode::refresh, &lock_diag);
    if (lock_ec) {
        if (mode == load_mode::miss && lock_ec == error::not_acquired) {
            // The other process's load outlasted our wait; what it wrote meanwhile still answers.
            auto [ec, stored] = co_await read_stored(store, key);
            if (!ec && stored)
                if (auto entry = decode_entry(*stored))
                    co_return load_outcome{{}, value_of(*entry, std::move(*stored))};
        }
        co_return load_outcome{lock_ec, std::nullopt, "the rebuild lock: " + std::string(lock_diag.message())};
    }

    // Read again: another process may have loaded it while we waited for the lock.
    {
        auto [ec, stored] = co_await read_stored(store, key);
        std::optional<cache_entry> entry;
        if (!ec && stored) entry = decode_entry(*stored);
        if (ec || (entry && (mode == load_mode::miss || entry->token > seen_token))) {
            co_await release(held);
            if (ec) co_return load_outcome{ec, std::nullopt, "the store: " + ec.message()};
            co_return load_outcome{{}, value_of(*entry, std::move(*stored))};
        }
    }

    // The loader, until it returns, load_timeout passes, the lock is lost, or the last waiter leaves.
    if (cancelled(co_await asio::this_coro::cancellation_state)) {
        co_await release(held);
        co_return load_outcome{make_error_code(asio::error::operation_aborted)};
    }
    const auto started = steady_clock::now();
    auto run = std::make_shared<loader_run>(impl->strand());
    asio::co_spawn(impl->strand(), call_loader(loader),
                   asio::bind_cancellation_slot(run->stop.slot(),
                                                [run, loader](std::exception_ptr e, std::optional<std::string> value) {
                                                    run->finished = true;
                                                    run->error = e;
                                                    run->value = std::move(value);
                                                    run->done.cancel();
                                                }));
    if (!run->finished) {
        asio::steady_timer deadline(impl->strand(), o.load_timeout);
        try {
            co_await asio::experimental::make_parallel_group(run->done.async_wait(asio::deferred),
                                                             deadline.async_wait(asio::deferred),
                                                             held.async_wait_lost(asio::deferred))
                .async_wait(asio::experimental::wait_for_one(), asio::use_awaitable);
        } catch (...) {
            if (!run->finished) run->stop.emit(asio::cancellation_type::terminal);
            throw;
        }
    }
    if (!run->finished) {
        run->stop.emit(asio::cancellation_type::terminal);  // on the strand, the loader's own
        load_outcome outcome{make_error_code(error::timeout), std::nullopt,
                             "the loader did not finish in load_timeout"};
        if (cancelled(co_await asio::this_coro::cancellation_state))
            outcome = {make_error_code(asio::error::operation_aborted), std::nullopt, {}};
        else if (held.lost())
            outcome = {make_error_code(error::lost), std::nullopt, "the rebuild lock was lost while the loader ran"};
        co_await release(held);
        co_return outcome;
    }
    if (run->error) {
        co_await release(held);
        co_return loader_failure(run->error);
    }
    auto& value = run->value;
    if (!value && o.null_ttl == ms(0)) {
        co_await release(held);
        co_return load_outcome{};
    }

    // The write, fenced by the lock's token: a holder that stalled past its lease cannot overwrite a newer value.
    const auto now = std::chrono::time_point_cast<ms>(system_clock::now());
    const double unit = impl->unit();
    cache_entry entry;
    entry.null = !value;
    entry.token = held.fencing_token();
    entry.delta = std::chrono::duration_cast<std::chrono::microseconds>(steady_clock::now() - started);
    const auto ttl = jittered(value ? o.ttl : o.null_ttl, o.ttl_jitter, unit);
    entry.expires_at = now + ttl;
    entry.refresh_at = value && o.soft_ttl > ms(0) ? now + jittered(o.soft_ttl, o.ttl_jitter, unit) : entry.expires_at;
    const auto req = store_request(key, entry.token, encode_entry(entry, value ? *value : std::string_view()), ttl);
    response resp;
    auto ec = co_await exec(store, req, resp, key);
    store_reply stored;
    if (!ec) ec = read_store_reply(resp[0], stored);
    co_await release(held);
    if (ec)  // loaded but not kept: the waiters still get the value
        co_return load_outcome{{}, std::move(value), "loaded, but the store refused the write: " + ec.message()};
    if (!stored.written)
        if (auto newer = decode_entry(*stored.newer)) co_return load_outcome{{}, value_of(*newer, *stored.newer)};
    co_return load_outcome{{}, std::move(value)};
}

load_outcome outcome_of(std::exception_ptr e)
{
    try {
        std::rethrow_exception(e);
    } catch (const boost::system::system_error& x) {
        return {x.code(), std::nullopt, {}};
    } catch (...) {
        return {make_error_code(asio::error::fault), std::nullopt, {}};
    }
}

}  // namespace

std::shared_ptr<flight> cache_guard_impl::join_load(const std::string& key, const shared_loader& loader,
                                                    const cache_options& o)
{
    if (auto it = loads_.find(key); it != loads_.end()) return it->second;
    std::weak_ptr<cache_guard_impl> weak = weak_from_this();
    auto f = std::make_shared<flight>(strand_, [weak, key](const flight& abandoned) {
        if (auto self = weak.lock()) self->forget(key, abandoned);
    });
    loads_.emplace(key, f);
    asio::co_spawn(strand_, load(shared_from_this(), key, loader, o, load_mode::miss, 0),
                   asio::bind_cancellation_slot(
                       f->stop_slot(), [self = shared_from_this(), f, key](std::exception_ptr e, load_outcome outcome) {
                           if (e) outcome = outcome_of(e);
                           self->forget(key, *f);
                           f->finish(outcome);
                       }));
    return f;
}

void cache_guard_impl::start_refresh(const std::string& key, const shared_loader& loader, const cache_options& o,
                                     std::uint64_t seen_token)
{
    if (!refreshes_.insert(key).second) return;
    // A failed refresh keeps the old value: its outcome goes nowhere.
    asio::co_spawn(strand_, load(shared_from_this(), key, loader, o, load_mode::refresh, seen_token),
                   [self = shared_from_this(), key](std::exception_ptr, load_outcome) { self->refreshes_.erase(key); });
}

namespace {

asio::awaitable<std::tuple<error_code, std::optional<std::string>>> get_or_load(std::shared_ptr<cache_guard_impl> impl,
                                                                                std::string key, cache_loader loader,
                                                                                cache_options o, diagnostics* diag)
{
    using result = std::tuple<error_code, std::optional<std::string>>;
    // Leaving a wait changes nothing for the other waiters: every cancellation type is safe.
    co_await asio::this_coro::reset_cancellation_state(asio::enable_total_cancellation());
    if (diag) diag->clear();
    if (auto why = invalid_arguments(key, loader, o); !why.empty()) {
        if (diag) access::set_client_message(*diag, std::move(why));
        co_return result{make_error_code(error::invalid_argument), std::nullopt};
    }
    auto [ec, stored] = co_await read_stored(impl->store(), key);
    if (ec) {
        if (diag) access::set_client_message(*diag, "the store: " + ec.message());
        co_return result{ec, std::nullopt};
    }
    std::optional<cache_entry> entry;
    if (stored) entry = decode_entry(*stored);
    switch (decide_read(entry, system_clock::now(), o.xfetch_beta, impl->unit())) {
        case read_action::serve_and_refresh:
            impl->start_refresh(key, std::make_shared<const cache_loader>(std::move(loader)), o, entry->token);
            [[fallthrough]];
        case read_action::serve:
            co_return result{error_code{}, value_of(*entry, std::move(*stored))};
        case read_action::load:
            break;
    }
    // Cancelled during the read: leave before joining, or the load would start with nobody to leave it.
    if (cancelled(co_await asio::this_coro::cancellation_state))
        co_return result{make_error_code(asio::error::operation_aborted), std::nullopt};
    auto f = impl->join_load(key, std::make_shared<const cache_loader>(std::move(loader)), o);
    auto [load_ec, outcome] = co_await f->async_wait(use_tuple);
    if (diag && !outcome.message.empty()) access::set_client_message(*diag, std::move(outcome.message));
    co_return result{load_ec, std::move(outcome.value)};
}

}  // namespace

void start_get_or_load(const std::shared_ptr<cache_guard_impl>& impl, std::string key, cache_loader loader,
                       const cache_options& options, diagnostics* diag, cache_handler handler)
{
    spawn_op<std::optional<std::string>>(impl->strand(), impl->io_executor(),
                                         get_or_load(impl, std::move(key), std::move(loader), options, diag),
                                         std::move(handler));
}

}  // namespace detail

cache_guard::cache_guard(const client& locks, redis store, cache_options defaults)
    : impl_(std::make_shared<detail::cache_guard_impl>(detail::access::impl(locks), std::move(store), std::nullopt)),
      options_(defaults)
{}

cache_guard::cache_guard(const client& locks, redis store, bloom_filter known_keys, cache_options defaults)
    : impl_(std::make_shared<detail::cache_guard_impl>(detail::access::impl(locks), std::move(store),
                                                       std::move(known_keys))),
      options_(defaults)
{}

}  // namespace redlock
