// `redlock bench --scenario limiter`: rate limiter decisions per second against one node. C clients (each its own
// connection to the node, a redlock::redis, as C processes would have) of W workers; each worker asks its own key's
// limiter (one subject each, as per-user limits are) for one unit in a loop, without waiting, and counts what it was
// told. An operation is one decision, its latency the first row.
#include "cli/bench/scenarios.hpp"
#include "cli/common/duration.hpp"

#include <redlock/rate_limiter.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace redlock::cli {

bench_columns limiter_columns(const limiter_totals& t)
{
    bench_columns c;
    c.operation = "decisions";
    c.rate = "decisions/s";
    c.latency = "decision";
    c.after_rate.push_back("limiter      " + t.strategy + " " + t.rate +
                           (t.strategy == "gcra" ? ", burst " + std::to_string(t.burst) : "") + " per worker's key: " +
                           std::to_string(t.admitted) + " admitted, " + std::to_string(t.limited) + " limited");
    c.json += json_field("strategy", json_string(t.strategy));
    c.json += json_field("rate", json_string(t.rate));
    c.json += json_field("burst", std::to_string(t.burst));
    c.json += json_field("admitted", std::to_string(t.admitted));
    c.json += json_field("limited", std::to_string(t.limited));
    return c;
}

namespace {

namespace asio = boost::asio;
constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);

class limiter_bench final : public bench_scenario {
public:
    explicit limiter_bench(const bench_options& o) : o_(o), prefix_("redlock-bench:" + bench_run_id())
    {
        clients = o.clients;
        workers_per_client = o.workers;
        stores = true;
        unreachable = "the node";
        refusal = "use the rate limiter";
        limit_.strategy = o.strategy;
        limit_.rate = o.rate.count;
        limit_.period = o.rate.period;
        limit_.burst = o.burst;
        totals_ = {std::string(strategy_flag_name(o.strategy)), format_rate(o.rate), o.burst, 0, 0};
    }

    std::string describe(bench_driver&) override
    {
        return "bench: limiter, " + totals_.strategy + " " + totals_.rate +
               (o_.strategy == rate_strategy::gcra ? ", burst " + std::to_string(o_.burst) : "") + ", " +
               o_.nodes.front().to_string() + ", " + std::to_string(o_.clients) + " client(s) x " +
               std::to_string(o_.workers) + " worker(s), " + format_duration(o_.duration) + ", keys " + prefix_ + ":N";
    }

    asio::awaitable<void> work(bench_worker& w) override
    {
        rate_limiter limiter(w.shared_store(), prefix_ + ":" + std::to_string(w.index()), limit_);
        diagnostics diag;
        while (w.running()) {
            const auto t0 = bench_clock::now();
            auto [ec, d] = co_await limiter.async_try_acquire(1, diag, w.cancellable(use_tuple));
            const auto t1 = bench_clock::now();
            if (!w.running() && ec) break;        // cut short by an early stop
            if (ec == error::invalid_argument) {  // every call would fail the same way
                w.refused(ec, diag);
                break;
            }
            if (ec) {
                co_await w.failed("decision", ec, &diag);
                continue;
            }
            w.record(t1 - t0);
            w.done();
            ++(d.allowed() ? totals_.admitted : totals_.limited);
        }
    }

    std::string output(bench_figures& f, bool json) override
    {
        auto r = per_operation_result("limiter", o_, f);
        r.columns = limiter_columns(totals_);
        return json ? to_json(std::move(r)) : to_table(std::move(r));
    }

private:
    const bench_options& o_;
    const std::string prefix_;
    rate_limit limit_;
    limiter_totals totals_;
};

}  // namespace

std::unique_ptr<bench_scenario> limiter_scenario(const bench_options& o)
{
    return std::make_unique<limiter_bench>(o);
}

}  // namespace redlock::cli
