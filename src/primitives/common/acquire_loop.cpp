#include "primitives/common/acquire_loop.hpp"
#include "primitives/common/retry.hpp"

#include <redlock/detail/access.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>
#include <memory>
#include <random>
#include <string>

namespace redlock::detail {

namespace asio = boost::asio;
using clock = std::chrono::steady_clock;
using ms = std::chrono::milliseconds;

namespace {

// Registers a watcher for the loop's whole life: a release that lands while it is busy is kept for it.
class watch_scope {
public:
    watch_scope(release_wakeups& wakeups, const std::vector<std::string>& channels, release_watcher& w)
        : wakeups_(wakeups), channels_(channels), watcher_(w)
    {
        wakeups_.watch(channels_, watcher_);
    }
    ~watch_scope() { wakeups_.unwatch(channels_, watcher_); }
    watch_scope(const watch_scope&) = delete;
    watch_scope& operator=(const watch_scope&) = delete;

private:
    release_wakeups& wakeups_;
    const std::vector<std::string>& channels_;
    release_watcher& watcher_;
};

// Jitter needs no CSPRNG (tokens do): one generator per thread, seeded once.
double unit_random()
{
    thread_local std::minstd_rand rng(std::random_device{}());
    return std::uniform_real_distribution<double>(0.0, 1.0)(rng);
}

// Leaves the gate `id` after `delay`, on the client's strand; the client lives until then.
void leave_gate_after(const std::shared_ptr<client_impl>& client, std::string id, clock::duration delay)
{
    auto timer = std::make_shared<asio::steady_timer>(client->strand(), delay);
    timer->async_wait([client, id = std::move(id), timer](error_code) { client->gates().leave(id); });
}

bool cancelled(asio::cancellation_state state)
{
    return state.cancelled() != asio::cancellation_type::none;
}

ms until_deadline(clock::time_point deadline, clock::time_point now)
{
    return deadline == clock::time_point::max() ? ms::max() : std::chrono::duration_cast<ms>(deadline - now);
}

// What is left of `max_pause` since the attempt answered (what passed rounded up: never more than max_pause in all).
ms pause_left(ms max_pause, clock::time_point answered)
{
    if (max_pause == ms::max()) return ms::max();
    return std::max(max_pause - std::chrono::ceil<ms>(clock::now() - answered), ms(0));
}

}  // namespace

asio::awaitable<std::tuple<error_code, std::shared_ptr<lease_state>>> acquire_loop(std::shared_ptr<client_impl> client,
                                                                                   acquire_plan plan,
                                                                                   attempt_fn attempt,
                                                                                   diagnostics* diag)
{
    auto& wakeups = client->wakeups();
    release_watcher watcher(client->strand());
    watcher.token = plan.wake_token;
    watcher.shared = plan.shared;
    watcher.key_news = plan.key_news;
    watch_scope scope(wakeups, plan.channels, watcher);
    std::optional<asio::steady_timer> gate_wait;  // only when another attempt of this client holds the gate
    // A fair waiter with its ticket, or a writer that marked its wait: its attempts skip the gate. The gate keeps a
    // client's waiters from splitting the nodes' votes among themselves; a queued fair waiter cannot split them: every
    // node grants only the first live waiter of its queue (a fair semaphore: the first that holds no permit there), in
    // one order on every node, so two queued waiters of this client contend exactly as two of different clients would,
    // which the queue protocol already orders (doc/locks.md, "Why the order holds over N nodes"). And it must not wait
    // there: each attempt is its heartbeat, due within a waiter TTL of the last (lock_call.cpp, invalid_arguments), and
    // behind k other waiters' attempts on slow nodes the gate alone can take k node timeouts. A waiter without a ticket
    // (its first attempt, a try) is not queued yet: it passes the gate. A read-write lock's waiting writers are not
    // ordered among themselves, but the marks order them before every reader (a reader and a writer of this client
    // that split the nodes try again with the readers refused where the writer marked), and two writers that split
    // retry after the random pause of a split vote, as two clients' would.
    bool queued = false;
    wait_summary unreported;
    auto& summary = diag ? access::waiting(*diag) : unreported;
    const auto started = clock::now();
    bool woken_by_message = false;  // the last wait ended on a release message
    // Every way out is counted (client::stats()).
    const auto end = [&](error_code ec, std::shared_ptr<lease_state> granted) {
        client->counters().acquire_ended(ec, clock::now() - started, summary, granted && woken_by_message);
        return std::tuple{ec, std::move(granted)};
    };
    const auto aborted = [&] { return end(make_error_code(asio::error::operation_aborted), nullptr); };

    for (std::uint64_t n = 1;; ++n) {
        attempt_result result;
        bool notified_before = false;  // messages could be relied on when the attempt was sent
        clock::duration attempt_took{};
        {
            gate_pass gate(client->gates(), plan.gate_id);
            if (!queued && !gate.try_enter()) {
                if (!gate_wait) gate_wait.emplace(client->strand());
                if (!co_await gate.enter(*gate_wait)) co_return aborted();
            }
            notified_before = wakeups.reliable(plan.channels);
            watcher.acting_on_release = watcher.woken;
            watcher.woken = false;  // this attempt sees every release that came before it
            std::fill(watcher.freed.begin(), watcher.freed.end(), false);
            ++summary.attempts;
            const auto sent = clock::now();
            result = co_await attempt(n);
            attempt_took = clock::now() - sent;
            // A split vote undone while another coroutine of this client waits for the gate: handed the gate at
            // once, its attempt would follow this one's clean-up on the same connections, win the same nodes back
            // and split again in step with the other contender; with a silent node every split waits for its
            // deadline, and grants all but stop. The gate stays taken a random moment of up to one attempt, which
            // lets another client take those nodes. A timer hands it on: this call goes on at once (a try comes
            // back, a waiter pauses, a cancellation is seen), so it is never late for the hold. Not after a
            // conclusive failure (exceeds_limit).
            if (result.failure && result.refused && !result.conclusive && !result.granted_on.empty() &&
                gate.contended()) {
                gate.keep_taken();
                leave_gate_after(client, plan.gate_id,
                                 std::chrono::duration_cast<clock::duration>(attempt_took * unit_random()));
            }
            if (!result.failure || result.refused) watcher.acting_on_release = false;  // it had its answer
        }  // the outcome is known: the client's next waiter may try
        const auto answered = clock::now();
        queued = queued || result.queued;
        if (!result.failure) co_return end({}, std::move(result.granted));
        if (result.failure == asio::error::operation_aborted) co_return aborted();

        if (result.conclusive) co_return end(result.failure, nullptr);
        if (clock::now() >= plan.wait_until) {
            if (diag && !wakeups.refusal().empty() && n > 1)
                access::set_client_message(*diag, std::string(diag->client_message()) + "; " + wakeups.refusal());
            co_return end(result.failure, nullptr);
        }
        if (result.refused && !notified_before) {
            // Subscribe, then check again: a release between the refusal and the subscription has no message
            // for us, but that check sees it.
            wakeups.subscribe(plan.channels);
            // Not past a heartbeat either: a fair waiter's place lasts a waiter TTL without an attempt.
            const auto settle_until =
                std::min({plan.wait_until, answered + std::min(plan.settle_timeout, plan.max_pause)});
            while (!wakeups.reliable(plan.channels) && !wakeups.settled(plan.channels) && clock::now() < settle_until) {
                watcher.settling = true;
                watcher.timer.expires_at(settle_until);
                co_await watcher.timer.async_wait(asio::as_tuple(asio::use_awaitable));
                watcher.settling = false;
                if (cancelled(co_await asio::this_coro::cancellation_state)) co_return aborted();
            }
            if (wakeups.reliable(plan.channels)) {
                summary.notified = true;
                woken_by_message = false;  // a check, not a release
                continue;
            }
        }
        if (result.refused)  // another owner: what this attempt got has been given back
            for (auto i : result.granted_on)
                if (i < watcher.freed.size()) watcher.freed[i] = true;
        if (watcher.woken) {  // released while this attempt was on its way
            ++summary.woken_by_release;
            woken_by_message = true;
            continue;
        }
        // A split vote undone: the contenders' clean-ups freed a quorum, and every contender learns it at the same
        // moment. Retrying at once would split again in step; a random pause of up to two attempts breaks the tie.
        const bool split = wakeups.quorum_freed(watcher);
        const bool notified = wakeups.reliable(plan.channels);
        summary.notified = summary.notified || notified;
        const auto left = until_deadline(plan.wait_until, clock::now());
        auto pause = split ? ms::max()
                     : notified && result.holder_ttl
                         ? bounded_pause(*result.holder_ttl) + ms(1)  // a message comes first, unless the key lapses
                         : retry_delay(plan.retry_delay, plan.retry_jitter, result.holder_ttl, left, unit_random());
        // A fair waiter's heartbeat: what the wait for subscriptions took is part of max_pause, not added to it.
        pause = bounded_pause(std::min({pause, left, pause_left(plan.max_pause, answered)}));
        watcher.pausing = true;
        if (split) {
            using us = std::chrono::microseconds;
            const auto jitter = std::chrono::duration_cast<us>(2 * attempt_took * unit_random());
            watcher.timer.expires_after(std::min(jitter, std::chrono::duration_cast<us>(std::min(pause, ms(60'000)))));
        } else {
            watcher.timer.expires_after(pause);
        }
        co_await watcher.timer.async_wait(asio::as_tuple(asio::use_awaitable));
        watcher.pausing = false;
        if (cancelled(co_await asio::this_coro::cancellation_state)) co_return aborted();
        woken_by_message = watcher.woken || split;
        ++(woken_by_message ? summary.woken_by_release : summary.timed_retries);
    }
}

}  // namespace redlock::detail
