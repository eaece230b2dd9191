// http_inventory: a flash-sale HTTP service on Boost.Beast and redlock-asio.
//
//   PUT  /items/{id}           {"stock": N}: set the stock
//   POST /items/{id}/reserve   take one unit (Idempotency-Key: an order id, so a retry never takes two)
//   GET  /items/{id}           {"item", "stock", "reserved"}
//   GET  /metrics, /healthz, /readyz
//
// Every instance started with the same --nodes and --store serves the same stock: a reservation takes the item's
// lock on the lock nodes (Redlock) and writes with the lock's fencing token. README.md beside this file says
// how to run it and what it does on SIGTERM.
#if defined(__GNUC__) && !defined(__clang__)
// g++ 12 pairs the allocation of an Asio coroutine frame with the frame's own operator delete (which frees it
// correctly) and reports -Wmismatched-new-delete, for some frames only, as its inlining decides.
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif

#include "config.hpp"
#include "inventory.hpp"
#include "log.hpp"
#include "metrics.hpp"
#include "readiness.hpp"
#include "server.hpp"
#include "service.hpp"

#include <redlock/client.hpp>
#include <redlock/node_config.hpp>
#include <redlock/redis.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string_view>
#include <vector>

namespace asio = boost::asio;
using namespace http_inventory;
using namespace std::chrono_literals;
using redlock::log_level;

namespace {

// Connects what can be connected; a node that is down now is retried in the background by the library, and
// /readyz reports it, so a service can start before its dependencies.
asio::awaitable<void> connect_all(redlock::client& locks, redlock::redis& store)
{
    constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);
    auto [locks_ec] = co_await locks.async_connect(use_tuple);
    if (locks_ec) log(log_level::warning, "lock nodes: " + locks_ec.message() + " (retrying in the background)");
    auto [store_ec] = co_await store.async_connect(use_tuple);
    if (store_ec) log(log_level::warning, "store: " + store_ec.message() + " (retrying in the background)");
}

int run(const config& cfg)
{
    asio::io_context ioc(1);  // one thread: every session, handler and counter lives on it
    redlock::client locks(ioc.get_executor(), cfg.lock_nodes);
    const auto store_node = redlock::parse_url(cfg.store);
    redlock::redis store(ioc.get_executor(), store_node);  // stock, orders and the rate limits: one Redis
    locks.set_log_handler(
        [](log_level level, std::string_view message) { log(level, "redlock: " + std::string(message)); });

    inventory items(locks, store, cfg.lock_ttl);
    metrics stats;
    readiness probe(ioc.get_executor(), cfg.lock_nodes, store_node);
    probe.connect();
    service svc{cfg, locks, store, items, stats, probe};
    server srv(ioc, svc);
    const auto bound = srv.listen(cfg.listen_host, cfg.listen_port);

    log(log_level::info, "lock nodes: " + std::to_string(locks.size()) + " (quorum " + std::to_string(locks.quorum()) +
                             "), store: " + store_node.to_string());
    // Accept once the first connection attempts are over (at most a connect timeout): requests that came in
    // before would fail with not_connected. Bound already, so clients queue in the backlog meanwhile.
    asio::co_spawn(ioc, connect_all(locks, store), [&](std::exception_ptr e) {
        if (e) log(log_level::error, "connecting failed unexpectedly");
        if (svc.draining) return;
        srv.start();
        // The test harness and scripts read the bound port from this line (--listen HOST:0 picks a free one).
        std::printf("listening on %s:%u\n", bound.address().to_string().c_str(), static_cast<unsigned>(bound.port()));
        std::fflush(stdout);
    });

    int exit_code = 0;
    asio::signal_set signals(ioc, SIGTERM, SIGINT);
    asio::steady_timer hard_stop(ioc);
    auto on_drained = [&] {
        hard_stop.cancel();
        signals.cancel();
        // Every session has ended, so every lease was released by its with_lock: close the nodes.
        locks.close();
        store.close();
        probe.close();
        log(log_level::info, "drained; exiting");
        // The library's background timers (the release-channel sweep...) outlive close(): stop rather than wait.
        asio::post(ioc, [&ioc] { ioc.stop(); });
    };
    signals.async_wait([&](boost::system::error_code ec, int signal) {
        if (ec) return;
        log(log_level::info, std::string(signal == SIGTERM ? "SIGTERM" : "SIGINT") + ": draining");
        srv.drain(on_drained);
        // The drain deadline cancels requests; this one is the last resort if something still hangs after it.
        hard_stop.expires_after(cfg.shutdown_delay + cfg.drain_timeout + 5s);
        hard_stop.async_wait([&](boost::system::error_code timer_ec) {
            if (timer_ec) return;
            log(log_level::error, "drain did not finish; stopping");
            exit_code = 1;
            ioc.stop();
        });
        // A second signal: stop now.
        signals.async_wait([&](boost::system::error_code again_ec, int) {
            if (again_ec) return;
            log(log_level::warning, "second signal: stopping without waiting");
            exit_code = 1;
            ioc.stop();
        });
    });
    ioc.run();
    return exit_code;
}

}  // namespace

int main(int argc, char** argv)
{
    std::vector<std::string_view> args(argv + 1, argv + argc);
    for (auto a : args) {
        if (a == "--help" || a == "-h") {
            std::cout << usage();
            return 0;
        }
    }
    try {
        const config cfg = parse_config(args, std::getenv("REDLOCK_NODES"));
        return run(cfg);
    } catch (const config_error& e) {
        std::cerr << "http_inventory: " << e.what() << "\n";
        return 64;  // EX_USAGE, as the redlock CLI
    } catch (const std::exception& e) {
        log(log_level::error, e.what());
        return 1;
    }
}
