// `redlock bench` on locks (uncontended, contended, handoff): lock latency, throughput, client CPU and allocations
// per lock + release. Uncontended, each worker locks and releases its own key, one attempt each time; contended,
// every worker takes one key, holds it about 1 ms, and measures the handoff gap; handoff, a worker that released
// waits until another took the lock, and the run counts the wake-ups and the commands the nodes ran.
#include "cli/bench/scenarios.hpp"
#include "cli/common/duration.hpp"

#include <redlock/mutex.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>
#include <memory>
#include <optional>

namespace redlock::cli {

bench_columns lock_columns(bool contended, std::uint64_t grants, std::vector<std::int64_t> handoff_us,
                           const std::optional<lock_waits>& waits)
{
    bench_columns c;
    if (contended) {
        c.after_errors.push_back("handoffs     " + std::to_string(handoff_us.size()) + " of " + std::to_string(grants) +
                                 " grants went to another worker than the one that released");
    }
    if (waits) {
        const auto& w = *waits;
        c.json += json_field("lock", json_string(w.lock_kind));
        c.json += json_field("handoffs", std::to_string(handoff_us.size()));
        c.json += json_field("handoff_max_us", number_or_null(percentile(handoff_us, 100)));
        c.json += json_field("attempts", std::to_string(w.attempts));
        c.json += json_field("woken_by_release", std::to_string(w.woken_by_release));
        c.json += json_field("timed_retries", std::to_string(w.timed_retries));
        std::string calls;
        for (const auto& [command, n] : w.server_calls)
            calls += (calls.empty() ? "" : ",") + json_string(command) + ":" + std::to_string(n);
        c.json += json_field("server_calls", "{" + calls + "}");
        if (grants > 0) {
            const auto per_grant = [&](std::uint64_t n) { return fixed(static_cast<double>(n) / grants, 2); };
            c.after_errors.push_back("lock         " + w.lock_kind);
            c.after_errors.push_back(
                "waiting      " + per_grant(w.attempts) + " attempts per grant; retries woken by a release " +
                std::to_string(w.woken_by_release) + ", by a timer " + std::to_string(w.timed_retries));
            std::string per_command;
            for (const auto& [command, n] : w.server_calls) per_command += " " + command + " " + per_grant(n);
            c.after_errors.push_back("server/grant" + per_command + " (calls over every node)");
        }
    }
    if (contended) c.latency_rows.emplace_back("handoff", std::move(handoff_us));
    return c;
}

namespace {

namespace asio = boost::asio;
using std::chrono::milliseconds;
constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);

std::int64_t micros(bench_clock::duration d)
{
    return std::chrono::duration_cast<std::chrono::microseconds>(d).count();
}

class lock_bench final : public bench_scenario {
public:
    explicit lock_bench(const bench_options& o) : o_(o), key_("redlock-bench:" + bench_run_id())
    {
        clients = o.clients;
        workers_per_client = o.workers;
        if (handoff()) {
            waits_.emplace();
            waits_->lock_kind = o.fair ? "fair" : "plain";
        }
    }

    std::string describe(bench_driver&) override
    {
        return "bench: " + name() + ", " + std::to_string(o_.nodes.size()) + " node(s), " + std::to_string(o_.clients) +
               " client(s) x " + std::to_string(o_.workers) + " worker(s), " + format_duration(o_.duration) +
               ", keys " + key_ + (contended() ? "" : ":N");
    }

    asio::awaitable<void> prepare(bench_driver& d) override
    {
        if (!handoff()) co_return;
        co_await reset_server_stats(d.context().get_executor(), o_.nodes);
        granted_ = std::make_unique<asio::steady_timer>(d.context(), bench_clock::time_point::max());
    }

    asio::awaitable<void> work(bench_worker& w) override;

    asio::awaitable<void> conclude(bench_driver& d) override
    {
        if (handoff()) waits_->server_calls = co_await server_calls(d.context().get_executor(), o_.nodes);
    }

    std::string output(bench_figures& f, bool json) override
    {
        auto r = per_operation_result(name(), o_, f);
        r.fencing = o_.fencing;
        if (o_.replica_acks > 0) r.scenario += ", replica acks " + std::to_string(o_.replica_acks);
        r.handoff_us = handoff_gaps();
        r.columns = lock_columns(contended(), grants_.size(), r.handoff_us, waits_);
        return json ? to_json(std::move(r)) : to_table(std::move(r));
    }

private:
    struct grant {
        int holder;
        bench_clock::time_point acquired;
        std::optional<bench_clock::time_point> released;
        bench_clock::time_point release_started{};
    };

    // Every worker on one key. The handoff scenario: a worker that released waits until another took the lock.
    bool contended() const noexcept { return o_.kind == bench_options::scenario::contended || handoff(); }
    bool handoff() const noexcept { return o_.kind == bench_options::scenario::handoff; }
    std::string name() const { return handoff() ? "handoff" : contended() ? "contended" : "uncontended"; }

    // Grants come in lock order (one holder at a time): the gap is from grant k's release to grant k+1, when the
    // lock passed to another client (a holder taking it straight back hands nothing off). Contended: from the
    // release completing; handoff: from the release starting (the next holder may be granted before the releaser
    // heard back from every node).
    std::vector<std::int64_t> handoff_gaps() const
    {
        std::vector<std::int64_t> gaps;
        for (std::size_t k = 1; k < grants_.size(); ++k) {
            if (!grants_[k - 1].released || grants_[k - 1].holder == grants_[k].holder) continue;
            const auto from = handoff() ? grants_[k - 1].release_started : *grants_[k - 1].released;
            gaps.push_back(std::max<std::int64_t>(0, micros(grants_[k].acquired - from)));
        }
        return gaps;
    }

    // Handoff: until a grant after `slot` (another worker's), or the end.
    asio::awaitable<void> until_taken_after(bench_worker& w, std::size_t slot)
    {
        while (grants_.size() <= slot + 1 && w.running()) co_await granted_->async_wait(w.cancellable(use_tuple));
    }

    const bench_options& o_;
    const std::string key_;
    std::vector<grant> grants_;
    std::unique_ptr<asio::steady_timer> granted_;  // handoff: cancelled at every grant, wakes who waits for one
    std::optional<lock_waits> waits_;              // handoff: how the lock calls waited, what the nodes ran
};

asio::awaitable<void> lock_bench::work(bench_worker& w)
{
    const int index = w.index();
    const std::string key = contended() ? key_ : key_ + ":" + std::to_string(index);
    // The first worker sets the wake-up at the end for all (setting it again would cancel every wait on it).
    if (granted_ && granted_->expiry() != w.end()) granted_->expires_at(w.end());
    diagnostics diag;
    while (w.running()) {
        lock_options lo;
        lo.ttl = o_.ttl;
        lo.fencing = o_.fencing;
        lo.fair = o_.fair;
        lo.replica_acks = o_.replica_acks;
        lo.replica_ack_timeout = o_.replica_ack_timeout;
        // Uncontended: one attempt, so the latency is the protocol's alone. Contended: wait for our turn, but not
        // past the end of the run.
        lo.wait = contended() ? w.time_left() : milliseconds(0);
        mutex m(w.shared_client(), key, lo);
        const auto t0 = bench_clock::now();
        auto [ec, held] = co_await m.async_lock(diag, w.cancellable(use_tuple));
        const auto t1 = bench_clock::now();
        if (waits_) {
            waits_->attempts += diag.waiting().attempts;
            waits_->woken_by_release += diag.waiting().woken_by_release;
            waits_->timed_retries += diag.waiting().timed_retries;
        }
        if (ec) {
            // The run ended while we waited (a contended wait lasts until the end): not an error.
            if (!w.running() || (contended() && ec == error::not_acquired)) break;
            if (ec == error::invalid_argument) {  // every attempt would fail the same way
                w.refused(ec, diag);
                break;
            }
            co_await w.failed("lock", ec, &diag);
            continue;
        }
        w.record(t1 - t0);
        const std::size_t slot = grants_.size();
        if (contended()) {
            grants_.push_back({index, t1, std::nullopt});
            if (granted_) granted_->cancel();
            co_await w.pause(milliseconds(1));  // the holder's work
            grants_[slot].release_started = bench_clock::now();
        }
        auto [rec] = co_await held.async_release(use_tuple);
        if (rec) {
            co_await w.failed("release", rec);
            continue;
        }
        if (contended()) grants_[slot].released = bench_clock::now();
        w.done();
        if (handoff()) co_await until_taken_after(w, slot);
    }
}

}  // namespace

std::unique_ptr<bench_scenario> lock_scenario(const bench_options& o)
{
    return std::make_unique<lock_bench>(o);
}

}  // namespace redlock::cli
