// The distributed mutex: Redlock over the client's N nodes (N = 1 is the same code), with optional fencing.
#include "primitives/common/acquire_loop.hpp"
#include "primitives/common/client_impl.hpp"
#include "primitives/common/token.hpp"
#include "primitives/common/validity.hpp"
#include "primitives/fair/fair_lock.hpp"
#include "primitives/mutex/lock_call.hpp"
#include "primitives/mutex/lock_scripts.hpp"
#include "primitives/reentrant/reentrant_lock.hpp"

#include <redlock/detail/access.hpp>
#include <redlock/key_layout.hpp>
#include <redlock/mutex.hpp>

#include <boost/asio/this_coro.hpp>

#include <algorithm>

namespace redlock {
namespace detail {
namespace {

namespace asio = boost::asio;
using clock = std::chrono::steady_clock;
using ms = std::chrono::milliseconds;

// A plain lock call: the mutex's scripts, and the plain-command acquire for a first attempt that can use it.
struct plain_lock {
    std::shared_ptr<const lock_call> call;
    std::shared_ptr<const request> set_acquire;  // the first attempt's, when it can be one (see acquire_on_nodes)

    // The script acquire, built when first needed (on the client's strand, as every attempt runs).
    const std::shared_ptr<const request>& script_acquire() const
    {
        if (!script_acquire_)
            script_acquire_ = std::make_shared<const request>(lock_scripts::acquire_request(
                call->lease.keys, call->lease.token, call->options.ttl, call->options.node_timeout, call->fence_step));
        return script_acquire_;
    }

private:
    mutable std::shared_ptr<const request> script_acquire_;
};

// Sends attempt n's acquire to every node. The first attempt of a plain lock uses SET NX GET (a script costs
// the server several times more); later attempts run the script, whose re-grant of our own token is idempotent
// (a grant of an earlier attempt may have survived its clean-up). A node that rejects the SET (a server older
// than its version told, an ACL without PTTL, a proxy) turns the client to scripts; unless a quorum granted
// anyway, the attempt goes on with the script at once (it re-grants our token where the SET granted, and a
// failed attempt releases everywhere as always).
asio::awaitable<std::shared_ptr<fan_out_state>> acquire_on_nodes(const plain_lock& lock, std::uint64_t n)
{
    const auto& call = *lock.call;
    auto& nodes = call.client->nodes();
    const auto& key = call.lease.routing_key();
    if (n == 1 && lock.set_acquire && call.client->plain_acquire_usable()) {
        auto result = co_await nodes.fan_out(lock.set_acquire, key, lock_scripts::classify_set_acquire, call.quorum);
        bool rejected = false;
        for (std::size_t i = 0; i < result->replies.size(); ++i)  // only answered nodes: the others still write
            rejected = rejected || (result->answered(i) && lock_scripts::set_acquire_rejected(result->replies[i]));
        if (result->cancelled || !rejected) co_return result;
        call.client->reject_plain_acquire();
        call.client->log(log_level::info, "a node rejected the plain SET NX acquire: this client acquires by script");
        if (result->tally.decide() == quorum_tally::decision::reached) co_return result;
    }
    co_return co_await nodes.fan_out(lock.script_acquire(), key, lock_scripts::classify_acquire, call.quorum);
}

asio::awaitable<attempt_result> attempt(std::shared_ptr<const plain_lock> lock, std::uint64_t n)
{
    const auto start = clock::now();
    auto result = co_await acquire_on_nodes(*lock, n);
    co_return co_await conclude_attempt(lock->call, std::move(result), start, n);
}

attempt_fn plain_attempts(std::shared_ptr<const lock_call> call)
{
    auto lock = std::make_shared<plain_lock>();
    // A node whose version is not known yet (not connected) gets the SET too: if it is older, its syntax error
    // turns the client to scripts (acquire_on_nodes).
    constexpr std::uint32_t set_nx_get_since = 70000;  // Redis 7.0
    const auto& o = call->options;
    if (call->lease.keys.size() == 1 && !o.fencing && call->client->nodes().none_known_older_than(set_nx_get_since))
        lock->set_acquire = std::make_shared<const request>(
            lock_scripts::set_acquire_request(call->lease.routing_key(), call->lease.token, o.ttl, o.node_timeout));
    lock->call = std::move(call);
    return [lock = std::shared_ptr<const plain_lock>(std::move(lock))](std::uint64_t n) { return attempt(lock, n); };
}

asio::awaitable<std::tuple<error_code, lease>> lock(std::shared_ptr<client_impl> client, std::vector<std::string> keys,
                                                    lock_options o, std::string owner, bool one_attempt,
                                                    diagnostics* diag)
{
    // Total and partial cancellation too: a cancelled attempt cleans up after itself. No co_await may throw on
    // cancellation: the steps after one (an attempt's clean-up, a fair waiter leaving its queue) must run.
    co_await asio::this_coro::reset_cancellation_state(asio::enable_total_cancellation());
    co_await asio::this_coro::throw_if_cancelled(false);
    if (diag) diag->clear();
    if (auto why = invalid_arguments(*client, keys, o, owner); !why.empty()) {
        client->counters().acquire_ended(make_error_code(error::invalid_argument), {}, {}, false);
        if (diag) access::set_client_message(*diag, why);
        co_return std::tuple{make_error_code(error::invalid_argument), lease{}};
    }
    if (o.node_timeout == ms(0)) o.node_timeout = default_node_timeout(o.ttl);

    auto plan = make_plan(keys, o, one_attempt);
    auto call = std::make_shared<lock_call>();
    call->client = client;
    call->lease.keys = std::move(keys);
    call->lease.token = random_token();
    call->lease.key_value = owner.empty() ? call->lease.token : owner;
    call->options = o;
    call->fence_step = !call->options.fencing        ? lock_scripts::fence_step::none
                       : client->nodes().size() == 1 ? lock_scripts::fence_step::increment
                                                     : lock_scripts::fence_step::read;
    call->diag = diag;
    call->protocol = &mutex_protocol();
    call->quorum = client->nodes().majority();

    // Named, not a temporary inside the co_await: g++ 12 destroys such temporaries twice (a shared_ptr
    // released twice showed it).
    attempt_fn attempts;
    const bool waits = !one_attempt && o.wait > ms(0);
    if (call->options.fair) {
        make_fair(*call, plan);
        attempts = fair_attempts(call, waits);
    } else if (!owner.empty()) {
        make_reentrant(*call);
        attempts = reentrant_attempts(call);
    } else {
        attempts = plain_attempts(call);
    }
    auto outcome = co_await acquire_loop(client, std::move(plan), std::move(attempts), diag);
    auto& [ec, state] = outcome;
    if (ec && call->options.fair && waits) leave_queue(*call);  // a try-lock never joined
    co_return std::tuple{ec, state ? access::make<lease>(std::move(state)) : lease{}};
}

}  // namespace

void start_lock(const std::shared_ptr<client_impl>& client, std::vector<std::string> keys, lock_options options,
                std::string owner, bool one_attempt, diagnostics* diag, lock_handler handler)
{
    // Every cancellation type is safe here: a cancelled attempt releases what it may hold.
    spawn_op<lease>(client->strand(), client->io_executor(),
                    lock(client, std::move(keys), options, std::move(owner), one_attempt, diag), std::move(handler));
}

}  // namespace detail

mutex::mutex(const client& c, std::string key, lock_options options)
    : mutex(c, std::vector<std::string>{std::move(key)}, options)
{}

mutex::mutex(const client& c, std::vector<std::string> keys, lock_options options)
    : impl_(detail::access::impl(c)), keys_(std::move(keys)), options_(options)
{}

}  // namespace redlock
