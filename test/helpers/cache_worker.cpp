// A process that reads one cold key through a cache guard from many coroutines at once: the stampede test runs
// four of these together and counts the loader's runs on a separate node.
//
// Usage: helper_cache_worker LOCK_URLS STORE_URL COUNT_URL KEY CALLS LOAD_MS START_AT_MS
//   LOCK_URLS    comma-separated lock nodes (the rebuild lock)
//   STORE_URL    the node that keeps the values
//   COUNT_URL    the node where each loader run INCRs `loads:KEY` (neither a lock node nor the store)
//   CALLS        concurrent get_or_load calls of this process
//   LOAD_MS      how long the loader takes
//   START_AT_MS  Unix time (ms) at which the calls start, so the processes start together
// Prints one line: calls=N values=V errors=E loads_here=L elapsed_ms=T [first_error=...]
// Exit status: 0 every call returned the loaded value; 1 otherwise; 2 bad arguments; 3 not done in 60 s.
#include <redlock/redlock.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/system_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

namespace asio = boost::asio;
using ms = std::chrono::milliseconds;
constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);

namespace {

struct worker {
    worker(asio::any_io_executor ex, std::vector<redlock::node_config> lock_nodes, const redlock::node_config& store,
           const redlock::node_config& count)
        : locks(ex, std::move(lock_nodes)),
          guard(locks, redlock::make_connection_node(ex, store),
                redlock::cache_options{.ttl = ms(60'000),
                                       .ttl_jitter = 0.1,
                                       .load_timeout = ms(20'000),
                                       .lock = {.ttl = ms(5000), .wait = ms(30'000)}}),
          counter(ex, count)
    {}

    redlock::client locks;
    redlock::cache_guard guard;
    redlock::connection counter;
    std::string key;
    ms load_time{0};
    int calls = 0, done = 0, values = 0, errors = 0, loads_here = 0;
    std::string first_error;
};

asio::awaitable<std::optional<std::string>> load(std::shared_ptr<worker> w)
{
    ++w->loads_here;
    redlock::request req;
    req.push("INCR", "loads:" + w->key);
    co_await w->counter.async_exec(req, asio::use_awaitable);
    asio::steady_timer t(co_await asio::this_coro::executor, w->load_time);
    co_await t.async_wait(asio::use_awaitable);
    co_return "value of " + w->key;
}

asio::awaitable<void> call(std::shared_ptr<worker> w)
{
    redlock::cache_loader loader = [w] { return load(w); };
    redlock::diagnostics diag;
    auto [ec, value] = co_await w->guard.async_get_or_load(w->key, loader, w->guard.options(), diag, use_tuple);
    if (!ec && value == "value of " + w->key) {
        ++w->values;
    } else {
        ++w->errors;
        if (w->first_error.empty()) w->first_error = ec.message() + ": " + std::string(diag.message());
    }
    ++w->done;
}

}  // namespace

int main(int argc, char** argv)
{
    if (argc != 8) {
        std::fprintf(stderr, "usage: %s LOCK_URLS STORE_URL COUNT_URL KEY CALLS LOAD_MS START_AT_MS\n", argv[0]);
        return 2;
    }
    asio::io_context ctx;
    std::shared_ptr<worker> w;
    std::chrono::system_clock::time_point start_at;
    try {
        std::vector<redlock::node_config> lock_nodes;
        std::string urls = argv[1];
        for (std::size_t begin = 0;;) {
            const auto end = urls.find(',', begin);
            lock_nodes.push_back(redlock::parse_url(urls.substr(begin, end - begin)));
            if (end == std::string::npos) break;
            begin = end + 1;
        }
        w = std::make_shared<worker>(ctx.get_executor(), std::move(lock_nodes), redlock::parse_url(argv[2]),
                                     redlock::parse_url(argv[3]));
        w->key = argv[4];
        w->calls = std::stoi(argv[5]);
        w->load_time = ms(std::stol(argv[6]));
        start_at = std::chrono::system_clock::time_point(ms(std::stoll(argv[7])));
    } catch (const std::exception& e) {
        std::fprintf(stderr, "cache_worker: %s\n", e.what());
        return 2;
    }

    const auto started = std::chrono::steady_clock::now();
    asio::co_spawn(
        ctx,
        [w, start_at]() -> asio::awaitable<void> {
            co_await w->locks.async_connect(asio::use_awaitable);
            co_await w->counter.async_connect(asio::use_awaitable);
            asio::system_timer at(co_await asio::this_coro::executor, start_at);
            co_await at.async_wait(use_tuple);
            for (int i = 0; i < w->calls; ++i)
                asio::co_spawn(co_await asio::this_coro::executor, call(w), [](std::exception_ptr e) {
                    if (e) std::rethrow_exception(e);
                });
        },
        [](std::exception_ptr e) {
            if (e) std::rethrow_exception(e);
        });
    try {
        while (w->done < w->calls || w->calls == 0) {
            if (std::chrono::steady_clock::now() - started > std::chrono::seconds(60)) {
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
    const auto elapsed = std::chrono::duration_cast<ms>(std::chrono::steady_clock::now() - started).count();
    std::printf("calls=%d values=%d errors=%d loads_here=%d elapsed_ms=%lld%s%s\n", w->calls, w->values, w->errors,
                w->loads_here, static_cast<long long>(elapsed),
                w->first_error.empty() ? "" : " first_error=", w->first_error.c_str());
    std::fflush(stdout);
    return w->errors == 0 && w->values == w->calls ? 0 : 1;
}
