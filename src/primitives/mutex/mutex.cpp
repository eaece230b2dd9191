#include "primitives/common/client_impl.hpp"
#include "primitives/common/lease_state.hpp"
#include "primitives/common/retry.hpp"
#include "primitives/common/token.hpp"
#include "primitives/mutex/fencing.hpp"
#include "primitives/mutex/lock_scripts.hpp"
#include "quorum/quorum.hpp"

#include <redlock/mutex.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <random>

namespace redlock {
namespace detail {
namespace {

namespace asio = boost::asio;
using clock = std::chrono::steady_clock;
using ms = std::chrono::milliseconds;
constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);

// What is wrong with these arguments, or an empty string. Checked before any I/O.
std::string invalid_arguments(const client_impl& client, const std::vector<std::string>& keys, const lock_options& o)
{
    if (client.size() == 0) return "the client has no nodes";
    if (keys.empty()) return "no key to lock";
    for (const auto& key : keys)
        if (key.empty()) return "a lock key is empty";
    if (o.ttl <= ms(0)) return "ttl must be positive";
    if (o.ttl > lock_options::max_ttl) return "ttl must be at most 30 days (lock_options::max_ttl); use the watchdog";
    if (o.wait < ms(0)) return "wait must not be negative";
    if (o.node_timeout < ms(0) || o.node_timeout >= o.ttl) return "node_timeout must be in [0, ttl)";
    if (o.retry_delay < ms(0) || o.retry_jitter < ms(0)) return "retry_delay and retry_jitter must not be negative";
    if (!(o.drift_factor >= 0.0 && o.drift_factor < 0.5)) return "drift_factor must be in [0, 0.5)";
    if (drift(o.ttl, o.drift_factor) >= o.ttl) return "ttl is too short for the clock drift allowance";
    if (o.min_validity < ms(0) || o.min_validity >= o.ttl) return "min_validity must be in [0, ttl)";
    if (o.extend_interval < ms(0) ||
        o.extend_interval >= o.ttl - std::chrono::duration_cast<ms>(drift(o.ttl, o.drift_factor)))
        return "extend_interval must be in [0, ttl - drift): the watchdog would extend too late";
    if (o.watchdog && o.extend_interval == ms(0) &&
        o.ttl / 3 >= o.ttl - std::chrono::duration_cast<ms>(drift(o.ttl, o.drift_factor)))
        return "ttl is too short for the watchdog: ttl / 3 must be below the validity (ttl - drift)";
    if (o.max_hold < ms(0)) return "max_hold must not be negative";
    return {};
}

// Subscribes `timer` to the release channels of `keys` once started, and unsubscribes when destroyed.
class release_watch {
public:
    release_watch(client_impl& client, const std::vector<std::string>& keys, asio::steady_timer& timer)
        : client_(client), timer_(timer)
    {
        for (const auto& key : keys) channels_.push_back(release_channel(key));
    }
    ~release_watch()
    {
        if (started_) client_.unwatch(channels_, timer_);
    }
    release_watch(const release_watch&) = delete;
    release_watch& operator=(const release_watch&) = delete;

    void start()
    {
        if (!started_) client_.watch(channels_, timer_);
        started_ = true;
    }

private:
    client_impl& client_;
    asio::steady_timer& timer_;
    std::vector<std::string> channels_;
    bool started_ = false;
};

std::optional<ms> shortest_holder_ttl(const fan_out_state& result)
{
    std::optional<ms> shortest;
    for (std::size_t i = 0; i < result.replies.size(); ++i) {
        if (!result.results[i] || result.votes[i] != vote::no) continue;
        if (auto t = lock_scripts::holder_ttl(result.replies[i]); t && (!shortest || *t < *shortest)) shortest = t;
    }
    return shortest;
}

std::string tally_text(const quorum_tally& tally, std::string_view yes, std::string_view no)
{
    return std::to_string(tally.yes()) + " of " + std::to_string(tally.nodes()) + " nodes " + std::string(yes) + ", " +
           std::to_string(tally.no()) + " " + std::string(no) + ", " + std::to_string(tally.errors()) +
           " failed; a quorum needs " + std::to_string(tally.quorum());
}

// The fencing token of a granted attempt. One node: the counter its acquire script incremented. N nodes:
// phase 2, committing 1 + the highest counter the granting nodes reported on a quorum before the validity
// ends (DESIGN.md, "Fencing tokens"). Nodes that granted after the decision may add their counters: a higher
// token is as good.
asio::awaitable<std::tuple<error_code, std::uint64_t>> issue_fence(client_impl& client, const fan_out_state& grants,
                                                                   const std::vector<std::string>& keys,
                                                                   const std::string& token, const lock_options& o,
                                                                   clock::time_point until, diagnostics* diag)
{
    fence_maximum highest;
    for (std::size_t i = 0; i < grants.replies.size(); ++i) {
        if (!grants.results[i] || grants.votes[i] != vote::yes) continue;
        if (auto counter = lock_scripts::granted_fence(grants.replies[i])) highest.add(*counter);
    }
    if (client.size() == 1) {  // the acquire script incremented the counter: its value is the token
        if (highest.highest() == 0) co_return std::tuple{make_error_code(error::protocol_error), std::uint64_t{0}};
        co_return std::tuple{error_code{}, highest.highest()};
    }

    const auto fence = highest.next();
    auto result = co_await client.fan_out(lock_scripts::commit_request(keys, token, fence, o.node_timeout),
                                          lock_scripts::classify_commit, client_impl::until::decided, until);
    if (result->cancelled) co_return std::tuple{make_error_code(asio::error::operation_aborted), std::uint64_t{0}};
    const auto& tally = result->tally;
    error_code failure;
    if (tally.decide() == quorum_tally::decision::reached)
        failure = until - clock::now() > o.min_validity ? error_code{} : make_error_code(error::timeout);
    else if (result->expired)
        failure = error::timeout;
    else
        failure = tally.failed_by_errors() ? error::no_quorum : error::not_acquired;
    if (failure && diag) {
        diag->set_nodes(result->outcomes(client.nodes()));
        diag->set_client_message(
            "a quorum granted the lock, but fencing token " + std::to_string(fence) +
            " was not committed on a quorum in time: " + tally_text(tally, "committed", "refused"));
    }
    co_return std::tuple{failure, fence};
}

// g++ 12 reports -Wmismatched-new-delete on the frame of this coroutine: a false positive (Asio's awaitable
// frames come from its recycling allocator, whose new and delete match). Off for this function only.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif
asio::awaitable<std::tuple<error_code, lease>> lock(std::shared_ptr<client_impl> client, std::vector<std::string> keys,
                                                    lock_options o, bool one_attempt, diagnostics* diag)
{
    // Total and partial cancellation too: a cancelled attempt cleans up after itself.
    co_await asio::this_coro::reset_cancellation_state(asio::enable_total_cancellation());
    if (diag) diag->clear();
    if (auto why = invalid_arguments(*client, keys, o); !why.empty()) {
        if (diag) diag->set_client_message(why);
        co_return std::tuple{make_error_code(error::invalid_argument), lease{}};
    }
    if (o.node_timeout == ms(0)) o.node_timeout = default_node_timeout(o.ttl);
    const auto token = random_token();
    const auto fence_step = !o.fencing            ? lock_scripts::fence_step::none
                            : client->size() == 1 ? lock_scripts::fence_step::increment
                                                  : lock_scripts::fence_step::read;
    const auto acquire = lock_scripts::acquire_request(keys, token, o.ttl, o.node_timeout, fence_step);
    const auto release = lock_scripts::release_request(keys, token, o.node_timeout);

    const auto first_start = clock::now();
    const auto wait_until = one_attempt || o.wait == ms(0)         ? first_start
                            : o.wait == lock_options::wait_forever ? clock::time_point::max()
                                                                   : first_start + o.wait;
    std::minstd_rand rng(std::random_device{}());
    std::uniform_real_distribution<double> unit(0.0, 1.0);
    asio::steady_timer pause(client->strand());
    release_watch watch(*client, keys, pause);
    asio::steady_timer gate_wait(client->strand());
    std::string gate_id;
    for (const auto& key : keys) gate_id.append(key).push_back('\0');

    for (;;) {
        const bool entered = co_await client->enter_gate(gate_id, gate_wait);
        if (!entered) co_return std::tuple{make_error_code(asio::error::operation_aborted), lease{}};
        const auto start = clock::now();
        auto result = co_await client->fan_out(acquire, lock_scripts::classify_acquire);  // never throws
        client->leave_gate(gate_id);  // the outcome is known: the client's next waiter may try
        if (result->cancelled) {
            client->send_to_all(release);  // a node may have granted already, or may still
            co_return std::tuple{make_error_code(asio::error::operation_aborted), lease{}};
        }
        const auto& tally = result->tally;
        const auto until = valid_until(start, o.ttl, o.drift_factor);
        if (diag) diag->set_nodes(result->outcomes(client->nodes()));
        error_code failure;
        if (tally.decide() != quorum_tally::decision::reached) {
            failure = tally.failed_by_errors() ? error::no_quorum : error::not_acquired;
            if (diag) diag->set_client_message(tally_text(tally, "granted", "refused"));
        } else if (until - clock::now() <= o.min_validity) {
            failure = error::timeout;
            if (diag) {
                diag->set_client_message("a quorum granted, but only after " +
                                         std::to_string(std::chrono::duration_cast<ms>(clock::now() - start).count()) +
                                         " ms: the validity left was below the minimum");
            }
        } else {
            std::uint64_t fence = 0;
            if (o.fencing)
                std::tie(failure, fence) = co_await issue_fence(*client, *result, keys, token, o, until, diag);
            if (failure == asio::error::operation_aborted) {
                client->send_to_all(release);
                co_return std::tuple{failure, lease{}};
            }
            if (!failure) {
                auto state = std::make_shared<lease_state>(client, std::move(keys), token, fence, o, start, until);
                state->start();
                co_return std::tuple{error_code{}, lease(std::move(state))};
            }
        }
        client->send_to_all(release);  // on all N nodes: a late grant may still land on the silent ones

        const auto now = clock::now();
        if (now >= wait_until) co_return std::tuple{failure, lease{}};
        const auto left =
            wait_until == clock::time_point::max() ? ms::max() : std::chrono::duration_cast<ms>(wait_until - now);
        // Refused: a release will be published; wake up for it rather than wait out the delay.
        if (tally.no() > 0) watch.start();
        pause.expires_after(retry_delay(o.retry_delay, o.retry_jitter, shortest_holder_ttl(*result), left, unit(rng)));
        co_await pause.async_wait(use_tuple);
        if ((co_await asio::this_coro::cancellation_state).cancelled() != asio::cancellation_type::none)
            co_return std::tuple{make_error_code(asio::error::operation_aborted), lease{}};
    }
}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

}  // namespace

void start_lock(const std::shared_ptr<client_impl>& client, std::vector<std::string> keys, lock_options options,
                bool one_attempt, diagnostics* diag, lock_handler handler)
{
    // Every cancellation type is safe here: a cancelled attempt releases what it may hold.
    spawn_op<lease>(client->strand(), lock(client, std::move(keys), options, one_attempt, diag), std::move(handler));
}

}  // namespace detail

mutex::mutex(const client& c, std::string key, lock_options options)
    : mutex(c, std::vector<std::string>{std::move(key)}, options)
{}

mutex::mutex(const client& c, std::vector<std::string> keys, lock_options options)
    : client_(c.impl()), keys_(std::move(keys)), options_(options)
{}

}  // namespace redlock
