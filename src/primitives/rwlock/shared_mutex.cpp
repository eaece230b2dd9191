// The read-write lock: its two sides and its two conversions as lock kinds, run by the common lock call over the
// client's N nodes (N = 1 is the same code). doc/algorithms.md, "Read-write lock", has the protocol.
#include "primitives/common/client_impl.hpp"
#include "primitives/common/heartbeat_budget.hpp"
#include "primitives/common/lease_state.hpp"
#include "primitives/common/lock_call.hpp"
#include "primitives/common/lock_kind.hpp"
#include "primitives/common/token.hpp"
#include "primitives/common/token_lease.hpp"
#include "primitives/rwlock/rwlock_scripts.hpp"

#include <redlock/detail/access.hpp>
#include <redlock/shared_mutex.hpp>

#include <boost/asio/this_coro.hpp>

namespace redlock {
namespace detail {
namespace {

namespace asio = boost::asio;
using clock = std::chrono::steady_clock;

const lease_protocol& reader_protocol()
{
    static const lease_protocol p{
        .extend = rwlock_scripts::read_extend_request,
        .extended = rwlock_scripts::classify_read_extend,
        .release = rwlock_scripts::release_request,
        .released = token_lease::classify_release,
        .repair = rwlock_scripts::read_repair_request,
        .needs_repair = rwlock_scripts::reader_gone,
        .extend_batch = rwlock_scripts::read_extend_batch_request,
    };
    return p;
}

// The writer's key is the plain lock's: it extends as a token lease; its release and repair know the readers.
const lease_protocol& writer_protocol()
{
    static const lease_protocol p{
        .extend = token_lease::extend_request,
        .extended = token_lease::classify_extend,
        .release = rwlock_scripts::release_request,
        .released = token_lease::classify_release,
        .repair = rwlock_scripts::write_repair_request,
        .needs_repair = token_lease::lost_key,
        .extend_batch = token_lease::extend_batch_request,
        .tracked = true,
    };
    return p;
}

// A reader's attempts, and a downgrade's (the writer's own token): the same request every time.
attempt_fn read_attempts(std::shared_ptr<const lock_call> call, bool)
{
    const auto& o = call->options;
    auto acquire = std::make_shared<const request>(
        rwlock_scripts::read_acquire_request(call->lease().routing_key(), call->lease().token, o.ttl, o.node_timeout));
    return same_request_attempts(std::move(call), std::move(acquire));
}

asio::awaitable<attempt_result> write_attempt(std::shared_ptr<const lock_call> call,
                                              std::shared_ptr<const request> acquire, bool waits, std::uint64_t n)
{
    const auto start = clock::now();
    auto result = co_await fan_out_acquire(call, std::move(acquire));
    auto out = co_await conclude_attempt(std::move(call), std::move(result), start, n);
    out.queued = waits;  // its next attempts renew its mark: heartbeats, which skip the client's gate (acquire_loop)
    co_return out;
}

// A writer's attempts: the same request every time, which marks its wait when it waits.
attempt_fn write_attempts(std::shared_ptr<const lock_call> call, bool waits)
{
    const auto& o = call->options;
    auto acquire = std::make_shared<const request>(rwlock_scripts::write_acquire_request(
        call->lease().routing_key(), call->lease().token, o.ttl, o.waiter_ttl, waits, call->fence, o.node_timeout));
    return [call = std::move(call), acquire = std::move(acquire), waits](std::uint64_t n) {
        return write_attempt(call, acquire, waits, n);
    };
}

// An upgrade: the write acquire of the reader's own token, without a mark (it never waits).
attempt_fn upgrade_attempts(std::shared_ptr<const lock_call> call, bool)
{
    const auto& o = call->options;
    auto acquire = std::make_shared<const request>(rwlock_scripts::write_acquire_request(
        call->lease().routing_key(), call->lease().token, o.ttl, o.waiter_ttl, false, call->fence, o.node_timeout));
    return same_request_attempts(std::move(call), std::move(acquire));
}

// `marks`: a writer that may wait, whose attempts heartbeat its mark within waiter_ttl.
std::string invalid_rw_arguments(const client_impl& client, const std::string& key, const lock_options& o, bool marks)
{
    if (auto why = invalid_arguments(client, {key}, o, {}); !why.empty()) return why;
    if (o.fair) return "a shared_mutex is not fair (lock_options::fair): writers wait first, in no order";
    return marks ? heartbeat_budget_problem(o, "a waiting writer") : std::string();
}

asio::awaitable<std::tuple<error_code, lease>> lock_side(std::shared_ptr<client_impl> client, std::string key,
                                                         lock_options o, bool shared, bool one_attempt,
                                                         diagnostics* diag)
{
    // As every lock call: every cancellation type, and no co_await throws on it (a cancelled attempt cleans up, a
    // writer that gives up takes its mark away).
    co_await asio::this_coro::reset_cancellation_state(asio::enable_total_cancellation());
    co_await asio::this_coro::throw_if_cancelled(false);
    if (diag) diag->clear();
    const bool marks = !shared && !one_attempt && o.wait > std::chrono::milliseconds(0);
    if (auto why = invalid_rw_arguments(*client, key, o, marks); !why.empty()) {
        client->counters().acquire_ended(make_error_code(error::invalid_argument), {}, {}, false);
        if (diag) access::set_client_message(*diag, why);
        co_return std::tuple{make_error_code(error::invalid_argument), lease{}};
    }
    if (shared) o.fencing = false;  // fencing orders writes; readers make none
    lease_spec spec;
    spec.keys = {std::move(key)};
    spec.token = random_token();
    spec.key_value = spec.token;
    const auto quorum = client->nodes().majority();
    auto call =
        make_call(std::move(client), shared ? read_lock_kind() : write_lock_kind(), std::move(spec), o, quorum, diag);
    auto outcome = co_await run_call(std::move(call), one_attempt);
    auto& [ec, state] = outcome;
    co_return std::tuple{ec, state ? access::make<lease>(std::move(state)) : lease{}};
}

// What is wrong with converting `held` (to the write side when `to_write`) through the lock of `key`, or empty.
std::string unconvertible(lease_state* held, client_impl& client, const std::string& key, bool to_write)
{
    const auto* from = to_write ? &reader_protocol() : &writer_protocol();
    if (!held) return "the lease is empty";
    if (&held->protocol() != from)
        return to_write ? "only a read lease of a shared_mutex can be upgraded"
                        : "only a write lease of a shared_mutex can be downgraded";
    if (held->keys().size() != 1 || held->keys().front() != key) return "the lease is of another lock";
    if (&held->strand() != &client.strand()) return "the lease is of another client";  // its strand is its client's
    return {};
}

asio::awaitable<std::tuple<error_code, lease>> convert(std::shared_ptr<client_impl> client, std::string key,
                                                       lock_options o, std::shared_ptr<lease_state> held, bool to_write,
                                                       diagnostics* diag)
{
    // One attempt, bounded by the node timeout: not cancellable, so that a conversion never ends half done.
    co_await asio::this_coro::reset_cancellation_state(
        [](asio::cancellation_type) { return asio::cancellation_type::none; });
    co_await asio::this_coro::throw_if_cancelled(false);
    if (diag) diag->clear();
    auto why = unconvertible(held.get(), *client, key, to_write);
    if (why.empty()) why = invalid_rw_arguments(*client, key, o, false);  // one attempt each: no mark
    if (!why.empty()) {
        if (diag) access::set_client_message(*diag, why);
        co_return std::tuple{make_error_code(error::invalid_argument), held ? access::make<lease>(held) : lease{}};
    }
    // From here on nothing of the old lease reaches the nodes (no extension, repair or release after the
    // conversion's request): the new lease, or the old one resumed, takes over.
    if (!held->hand_over()) {
        if (diag)
            access::set_client_message(*diag, held->lost() ? "the lease had been lost" : "the lease was released");
        co_return std::tuple{make_error_code(error::lost), lease{}};
    }
    if (!to_write) o.fencing = false;
    const auto quorum = client->nodes().majority();
    auto call =
        make_call(std::move(client), to_write ? upgrade_kind() : downgrade_kind(), held->spec(), o, quorum, diag);
    auto outcome = co_await run_call(std::move(call), true);
    auto& [ec, state] = outcome;
    if (!ec) co_return std::tuple{ec, access::make<lease>(std::move(state))};
    // A failed upgrade put the write keys back as reader's entries (its clean-up); the read lease holds as before. A
    // failed downgrade released both sides (its clean-up): nothing is held.
    if (to_write) co_return std::tuple{ec, access::make<lease>(held->resumed())};
    co_return std::tuple{ec, lease{}};
}

}  // namespace

const lock_kind& read_lock_kind()
{
    static const lock_kind kind{
        .protocol = &reader_protocol(),
        .read_answer = token_lease::read_acquire,
        .vote = verdict_of<token_lease::read_acquire>,
        .attempts = read_attempts,
        .clean_up = rwlock_scripts::release_request,
        .shared = true,
    };
    return kind;
}

const lock_kind& write_lock_kind()
{
    static const lock_kind kind{
        .protocol = &writer_protocol(),
        .read_answer = token_lease::read_acquire,
        .vote = verdict_of<token_lease::read_acquire>,
        .attempts = write_attempts,
        .clean_up = rwlock_scripts::release_keeping_mark,
        .commit = token_lease::commit_request,
        .marks_wait = true,
    };
    return kind;
}

const lock_kind& downgrade_kind()
{
    // The reader's kind as it is: the read acquire of the writer's own token converts, and a failed downgrade's
    // clean-up (the reader's release) takes both sides away, where the write key turned into the entry or not.
    return read_lock_kind();
}

const lock_kind& upgrade_kind()
{
    // A failed upgrade gives the write key back where it was granted; the reader's entry, which it kept, stays.
    static const lock_kind kind{
        .protocol = &writer_protocol(),
        .read_answer = token_lease::read_acquire,
        .vote = verdict_of<token_lease::read_acquire>,
        .attempts = upgrade_attempts,
        .clean_up = rwlock_scripts::release_write_side,
        .commit = token_lease::commit_request,
    };
    return kind;
}

void start_lock_side(const std::shared_ptr<client_impl>& client, std::string key, lock_options options, bool shared,
                     bool one_attempt, diagnostics* diag, side_handler handler)
{
    spawn_op<lease>(client->strand(), client->io_executor(),
                    lock_side(client, std::move(key), options, shared, one_attempt, diag), std::move(handler));
}

void start_convert(const std::shared_ptr<client_impl>& client, std::string key, lock_options options, lease held,
                   bool to_write, diagnostics* diag, side_handler handler)
{
    // Taken out of the handle: its destructor must not release what the conversion carries over.
    auto state = std::move(access::impl(held));
    spawn_op<lease>(client->strand(), client->io_executor(),
                    convert(client, std::move(key), options, std::move(state), to_write, diag), std::move(handler));
}

}  // namespace detail

shared_mutex::shared_mutex(const client& c, std::string key, lock_options options)
    : impl_(detail::access::impl(c)), key_(std::move(key)), options_(options)
{}

}  // namespace redlock
