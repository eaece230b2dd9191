// A process that reads one cold key through a cache guard from many coroutines at once: the stampede test runs
// four of these together and counts the loader's runs on a separate node; the fault test stops or kills one
// in the middle of its load.
//
// Usage: helper_cache_worker LOCK_URLS STORE_URL COUNT_URL KEY CALLS LOAD_MS START_AT_MS [OPTION...]
//   LOCK_URLS    comma-separated lock nodes (the rebuild lock)
//   STORE_URL    the node that keeps the values
//   COUNT_URL    the node where each loader run INCRs `loads:KEY` (neither a lock node nor the store)
//   CALLS        concurrent get_or_load calls of this process
//   LOAD_MS      how long the loader takes
//   START_AT_MS  Unix time (ms) at which the calls start, so the processes start together
// Options:
//   lock_ttl_ms=N  the rebuild lock's TTL (default 5000)
//   tag=T          the loader returns "value of KEY from T" (default: "value of KEY"), so a test can tell whose
//                  load a caller got
//   announce_load  the loader prints "loader started" (flushed) once it has counted itself, before its wait:
//                  a test stops or kills the process there, in the middle of the load
//   fail           the loader throws system_error(io_error) after LOAD_MS instead of returning
//   no_io_after_wait  the loader's wait is its last step: it sends its DECR of `loading:KEY` without waiting for
//                  the reply, so a process stopped during the wait has its loader's result the moment it resumes
// While a loader runs, `loading:KEY` on COUNT_URL counts it; a loader that finds another one running INCRs
// `overlaps:KEY` (the rebuild lock is meant to run them one at a time).
// Prints one line: calls=N values=V errors=E loads_here=L elapsed_ms=T max_call_ms=M other_values=O
// other_errors=X value_from=F timer_wakeups=W message_wakeups=R lock_requests=Q [first_error=...]; values counts
// calls that got a value of KEY (anyone's), other_values those whose value differs from the first one's,
// other_errors the errors that differ from the first error, value_from the tag of the first value ("-" none or
// untagged); the last three are the rebuild lock client's: its waits that a timer ended and those a release message
// ended (client_stats), and the requests it wrote to the lock nodes, all nodes together.
// Exit status: 0 every call returned a value of KEY; 1 otherwise; 2 bad arguments; 3 not done in 60 s.
#include "common.hpp"

#include <redlock/redlock.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/system_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/system/system_error.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace asio = boost::asio;
using ms = std::chrono::milliseconds;
using steady = std::chrono::steady_clock;
constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);

namespace {

struct settings {
    ms lock_ttl{5000};
    std::string tag;
    bool announce_load = false;
    bool fail = false;
    bool no_io_after_wait = false;
};

settings parse_options(int argc, char** argv, int first)
{
    settings s;
    for (int i = first; i < argc; ++i) {
        const std::string option = argv[i];
        if (option.starts_with("lock_ttl_ms="))
            s.lock_ttl = ms(std::stol(option.substr(12)));
        else if (option.starts_with("tag="))
            s.tag = option.substr(4);
        else if (option == "announce_load")
            s.announce_load = true;
        else if (option == "fail")
            s.fail = true;
        else if (option == "no_io_after_wait")
            s.no_io_after_wait = true;
        else
            throw std::invalid_argument("unknown option " + option);
    }
    return s;
}

struct worker {
    worker(asio::any_io_executor ex, std::vector<redlock::node_config> lock_nodes, const redlock::node_config& store,
           const redlock::node_config& count, settings s)
        : locks(ex, std::move(lock_nodes)),
          guard(locks, redlock::redis(ex, store),
                redlock::cache_options{.ttl = ms(60'000),
                                       .ttl_jitter = 0.1,
                                       .load_timeout = ms(20'000),
                                       .lock = {.ttl = s.lock_ttl, .wait = ms(30'000)}}),
          counter(ex, count),
          options(std::move(s))
    {}

    std::string value_prefix() const { return "value of " + key; }
    std::string loaded_value() const
    {
        return options.tag.empty() ? value_prefix() : value_prefix() + " from " + options.tag;
    }

    redlock::client locks;
    redlock::cache_guard guard;
    redlock::connection counter;
    settings options;
    std::string key;
    ms load_time{0};
    int calls = 0, done = 0, values = 0, errors = 0, loads_here = 0, other_values = 0, other_errors = 0;
    ms max_call{0};
    std::optional<std::string> first_value;
    redlock::error_code first_ec;
    std::string first_error;
};

asio::awaitable<std::int64_t> count(std::shared_ptr<worker> w, const char* command, const std::string& name)
{
    redlock::request req;
    req.push(command, name + ":" + w->key);
    redlock::response resp;
    co_await w->counter.async_exec(req, resp, asio::use_awaitable);
    co_return resp.at(0).as_integer().value_or(-1);
}

asio::awaitable<std::optional<std::string>> load(std::shared_ptr<worker> w)
{
    ++w->loads_here;
    co_await count(w, "INCR", "loads");
    if (co_await count(w, "INCR", "loading") > 1) co_await count(w, "INCR", "overlaps");
    if (w->options.announce_load) {
        std::printf("loader started\n");
        std::fflush(stdout);
    }
    asio::steady_timer t(co_await asio::this_coro::executor, w->load_time);
    co_await t.async_wait(asio::use_awaitable);
    if (w->options.no_io_after_wait)
        asio::co_spawn(co_await asio::this_coro::executor, count(w, "DECR", "loading"), helpers::rethrow);
    else
        co_await count(w, "DECR", "loading");
    if (w->options.fail)
        throw boost::system::system_error(boost::system::errc::make_error_code(boost::system::errc::io_error));
    co_return w->loaded_value();
}

asio::awaitable<void> call(std::shared_ptr<worker> w)
{
    redlock::cache_loader loader = [w] { return load(w); };
    redlock::diagnostics diag;
    const auto started = steady::now();
    auto [ec, value] = co_await w->guard.async_get_or_load(w->key, loader, w->guard.options(), diag, use_tuple);
    w->max_call = std::max(w->max_call, std::chrono::duration_cast<ms>(steady::now() - started));
    if (!ec && value && value->starts_with(w->value_prefix())) {
        ++w->values;
        if (!w->first_value)
            w->first_value = value;
        else if (*value != *w->first_value)
            ++w->other_values;
    } else {
        if (w->errors++ == 0) {
            w->first_ec = ec;
            w->first_error = ec.message() + ": " + std::string(diag.message());
        } else if (ec != w->first_ec) {
            ++w->other_errors;
        }
    }
    ++w->done;
}

// The tag of the value a caller got first: "-" when none or untagged.
std::string value_from(const worker& w)
{
    const std::string from = w.value_prefix() + " from ";
    if (!w.first_value || !w.first_value->starts_with(from)) return "-";
    return w.first_value->substr(from.size());
}

}  // namespace

int main(int argc, char** argv)
{
    if (argc < 8) {
        std::fprintf(stderr, "usage: %s LOCK_URLS STORE_URL COUNT_URL KEY CALLS LOAD_MS START_AT_MS [OPTION...]\n",
                     argv[0]);
        return 2;
    }
    asio::io_context ctx;
    std::shared_ptr<worker> w;
    std::chrono::system_clock::time_point start_at;
    try {
        w = std::make_shared<worker>(ctx.get_executor(), redlock::parse_node_list(argv[1]), redlock::parse_url(argv[2]),
                                     redlock::parse_url(argv[3]), parse_options(argc, argv, 8));
        w->key = argv[4];
        w->calls = std::stoi(argv[5]);
        w->load_time = ms(std::stol(argv[6]));
        start_at = std::chrono::system_clock::time_point(ms(std::stoll(argv[7])));
    } catch (const std::exception& e) {
        std::fprintf(stderr, "cache_worker: %s\n", e.what());
        return 2;
    }

    const auto started = steady::now();
    asio::co_spawn(
        ctx,
        [w, start_at]() -> asio::awaitable<void> {
            co_await w->locks.async_connect(asio::use_awaitable);
            co_await w->counter.async_connect(asio::use_awaitable);
            asio::system_timer at(co_await asio::this_coro::executor, start_at);
            co_await at.async_wait(use_tuple);
            for (int i = 0; i < w->calls; ++i)
                asio::co_spawn(co_await asio::this_coro::executor, call(w), helpers::rethrow);
        },
        helpers::rethrow);
    try {
        while (w->done < w->calls || w->calls == 0) {
            if (steady::now() - started > std::chrono::seconds(60)) {
                std::fprintf(stderr, "cache_worker: not done after 60 s (%d of %d)\n", w->done, w->calls);
                return 3;
            }
            ctx.run_one_for(ms(100));
            if (w->calls == 0) break;
        }
    } catch (const std::exception& e) {
        std::fprintf(stderr, "cache_worker: %s\n", e.what());
        return 1;
    }
    const auto elapsed = std::chrono::duration_cast<ms>(steady::now() - started).count();
    const auto lock_stats = w->locks.stats();
    unsigned long long lock_requests = 0;
    for (const auto& n : lock_stats.nodes) lock_requests += n.connection.requests;
    std::printf(
        "calls=%d values=%d errors=%d loads_here=%d elapsed_ms=%lld max_call_ms=%lld other_values=%d "
        "other_errors=%d value_from=%s timer_wakeups=%llu message_wakeups=%llu lock_requests=%llu%s%s\n",
        w->calls, w->values, w->errors, w->loads_here, static_cast<long long>(elapsed),
        static_cast<long long>(w->max_call.count()), w->other_values, w->other_errors, value_from(*w).c_str(),
        static_cast<unsigned long long>(lock_stats.wakeups_by_timer),
        static_cast<unsigned long long>(lock_stats.wakeups_by_message), lock_requests,
        w->first_error.empty() ? "" : " first_error=", w->first_error.c_str());
    std::fflush(stdout);
    return w->errors == 0 && w->values == w->calls ? 0 : 1;
}
