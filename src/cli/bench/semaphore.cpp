// `redlock bench --scenario semaphore`: C clients x W workers contend for the L permits of one semaphore, each
// holding a permit about 1 ms, releasing it and asking again after a random pause. With L about half the workers,
// some acquires find room at once and others wait for a release: the table says how many of each. An operation
// is one permit acquired, held and released.
#include "cli/bench/scenarios.hpp"
#include "cli/common/duration.hpp"

#include <redlock/semaphore.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>
#include <random>

namespace redlock::cli {

bench_columns semaphore_columns(semaphore_totals t)
{
    bench_columns c;
    c.operation = "permit acquire + release";
    c.json += json_field("limit", std::to_string(t.limit));
    c.json += json_field("fair", t.fair ? "true" : "false");
    c.json += json_field("max_held", std::to_string(t.max_held));
    c.json += json_field("first_try", std::to_string(t.first_try));
    c.json += json_field("first_try_us", short_percentiles(t.first_try_us));
    c.json += json_field("waited", std::to_string(t.waited));
    c.json += json_field("waited_us", short_percentiles(t.waited_us));
    c.json += json_field("attempts", std::to_string(t.attempts));
    c.json += json_field("woken_by_release", std::to_string(t.woken_by_release));
    c.json += json_field("timed_retries", std::to_string(t.timed_retries));
    const auto granted = t.first_try + t.waited;
    c.after_errors.push_back("semaphore    limit " + std::to_string(t.limit) + (t.fair ? ", fair" : "") + "; at most " +
                             std::to_string(t.max_held) + " permit(s) held at once by this run");
    c.after_errors.push_back(
        "acquires     " + std::to_string(t.first_try) + " found room at once, " + std::to_string(t.waited) +
        " waited; " +
        (granted > 0 ? fixed(static_cast<double>(t.attempts) / static_cast<double>(granted), 2) : std::string("-")) +
        " attempts per permit; retries woken by a release " + std::to_string(t.woken_by_release) + ", by a timer " +
        std::to_string(t.timed_retries));
    c.latency_rows.emplace_back("  at once", std::move(t.first_try_us));
    c.latency_rows.emplace_back("  waited", std::move(t.waited_us));
    return c;
}

namespace {

namespace asio = boost::asio;
using std::chrono::milliseconds;
constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);
constexpr milliseconds hold_time{1};  // a holder's work, as in the contended lock scenario
// Between a release and the next acquire, uniform in [0, 2 * think_time): without it every worker asks again at
// once and the semaphore is always full. With it each worker wants a permit about half the time, so with half as
// many permits as workers some acquires find room and others wait (a fixed pause swings the run from almost all
// waiting to almost none with the machine's speed; a random one spreads the arrivals).
constexpr std::chrono::microseconds think_time{1'500};

class semaphore_bench final : public bench_scenario {
public:
    explicit semaphore_bench(const bench_options& o) : o_(o), name_("redlock-bench:" + bench_run_id())
    {
        clients = o.clients;
        workers_per_client = o.workers;
        refusal = "acquire";
        // Half the workers by default, so that about half the acquires find a permit free and the others wait.
        totals_.limit = o.limit > 0 ? o.limit : std::max(1, o.clients * o.workers / 2);
        totals_.fair = o.fair;
    }

    std::string describe(bench_driver& d) override
    {
        const semaphore probe(d.client_at(0), name_, totals_.limit);
        return "bench: semaphore, limit " + std::to_string(totals_.limit) + (o_.fair ? " (fair)" : "") + ", " +
               std::to_string(o_.nodes.size()) + " node(s), quorum " + std::to_string(probe.quorum()) + ", " +
               std::to_string(o_.clients) + " client(s) x " + std::to_string(o_.workers) + " worker(s), " +
               format_duration(o_.duration) + ", key " + name_;
    }

    asio::awaitable<void> work(bench_worker& w) override;

    std::string output(bench_figures& f, bool json) override
    {
        auto r = per_operation_result("semaphore", o_, f);
        if (o_.replica_acks > 0) r.scenario += ", replica acks " + std::to_string(o_.replica_acks);
        r.columns = semaphore_columns(std::move(totals_));
        return json ? to_json(std::move(r)) : to_table(std::move(r));
    }

private:
    const bench_options& o_;
    const std::string name_;
    semaphore_totals totals_;
    std::int64_t holding_ = 0;  // permits granted to this run and not yet given back
};

asio::awaitable<void> semaphore_bench::work(bench_worker& w)
{
    diagnostics diag;
    std::minstd_rand random(static_cast<std::minstd_rand::result_type>(w.index() + 1));
    std::uniform_int_distribution<std::int64_t> think(0, 2 * think_time.count() - 1);
    while (w.running()) {
        semaphore_options so;
        so.ttl = o_.ttl;
        so.fair = o_.fair;
        so.replica_acks = o_.replica_acks;
        so.replica_ack_timeout = o_.replica_ack_timeout;
        so.wait = w.time_left();  // wait for a permit, but not past the end of the run
        semaphore s(w.shared_client(), name_, totals_.limit, so);
        const auto t0 = bench_clock::now();
        auto [ec, held] = co_await s.async_acquire(1, diag, w.cancellable(use_tuple));
        const auto t1 = bench_clock::now();
        const auto& waiting = diag.waiting();
        totals_.attempts += waiting.attempts;
        totals_.woken_by_release += waiting.woken_by_release;
        totals_.timed_retries += waiting.timed_retries;
        if (ec) {
            // The run ended while we waited: not an error.
            if (!w.running() || ec == error::not_acquired) break;
            if (ec == error::invalid_argument) {  // every attempt would fail the same way
                w.refused(ec, diag);
                break;
            }
            co_await w.failed("acquire", ec, &diag);
            continue;
        }
        w.record(t1 - t0);
        const auto us = std::chrono::duration_cast<std::chrono::microseconds>(t1 - t0).count();
        const bool at_once = waiting.attempts <= 1;
        ++(at_once ? totals_.first_try : totals_.waited);
        (at_once ? totals_.first_try_us : totals_.waited_us).push_back(us);
        totals_.max_held = std::max(totals_.max_held, ++holding_);
        co_await w.pause(hold_time);
        --holding_;  // before the release is sent: a count never above what the nodes hold
        auto [rec] = co_await held.async_release(use_tuple);
        if (rec) {
            co_await w.failed("release", rec);
            continue;
        }
        w.done();
        co_await w.pause(std::chrono::microseconds(think(random)));
    }
}

}  // namespace

std::unique_ptr<bench_scenario> semaphore_scenario(const bench_options& o)
{
    return std::make_unique<semaphore_bench>(o);
}

}  // namespace redlock::cli
