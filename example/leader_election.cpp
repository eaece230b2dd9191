// Leader election: three candidates of one election lead in turn, each writing a report fenced by its term and
// proclaiming what it does; an observer prints every change of leader as it happens. Then a deposed leader's late
// write, carrying its old term, is refused by the resource.
// Usage: redlock_example_leader_election [URL,URL,...]
// The node URLs come from the argument, else from $REDLOCK_NODES (comma-separated), else redis://127.0.0.1:6379.
#include <redlock/redlock.hpp>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

namespace asio = boost::asio;
using namespace std::chrono_literals;

std::vector<redlock::node_config> node_list(int argc, char** argv)
{
    const char* env = std::getenv("REDLOCK_NODES");
    return redlock::parse_node_list(argc > 1 ? argv[1] : env && *env ? env : "redis://127.0.0.1:6379");
}

asio::awaitable<void> work(std::chrono::milliseconds d)
{
    asio::steady_timer timer(co_await asio::this_coro::executor, d);
    co_await timer.async_wait(asio::use_awaitable);
}

// Who leads, in this process (one thread: no atomics needed), and the terms they led with.
int leaders = 0;
bool broken = false;
std::vector<std::uint64_t> terms;

// [lead]
asio::awaitable<void> candidate(redlock::election reports, redlock::redis store, std::string name)
{
    // Runs while this candidate leads: cancelled at once if the leadership is lost; resigns however it ends.
    auto body = [store, name](const redlock::leadership& led) -> asio::awaitable<void> {
        broken = broken || leaders++ != 0;
        terms.push_back(led.term());
        std::cout << name << " leads, term " << led.term() << "\n";
        co_await led.async_proclaim(name + ": writing the report", asio::use_awaitable);
        // The resource keeps the highest term it saw: a deposed leader's late write is refused.
        redlock::fenced_write report("{report}:fence", led.term());
        report.command("SET", "{report}:author", {name});
        co_await redlock::async_fenced_write(store, report, asio::use_awaitable);
        co_await work(200ms);
        --leaders;
    };
    co_await redlock::with_leadership(reports, name, body);
}
// [lead]

// [observe]
asio::awaitable<void> print_leaders(redlock::election_observer observer)
{
    for (;;) {
        auto leader = co_await observer.async_next(asio::use_awaitable);  // the leader now, then each change
        if (leader)
            std::cout << "  observer: term " << leader->term << " led by '" << leader->value << "'\n";
        else
            std::cout << "  observer: nobody leads\n";
    }
}
// [observe]

asio::awaitable<void> demo(redlock::client& client, redlock::node_config resource)
{
    co_await client.async_connect(asio::use_awaitable);
    // [make]
    redlock::election reports(client, "report:leader", {.ttl = 10s, .wait = 30s});
    // [make]
    redlock::redis store(client.get_executor(), resource);  // the resource: the first node
    std::cout << "-- " << client.size() << " node(s): a leader needs " << client.quorum() << " of them\n";

    auto ex = co_await asio::this_coro::executor;
    asio::cancellation_signal stop_observing;
    asio::co_spawn(ex, print_leaders(reports.observe()),
                   asio::bind_cancellation_slot(stop_observing.slot(), [](std::exception_ptr) {}));
    int done = 0;
    for (const char* name : {"alpha", "beta", "gamma"})
        asio::co_spawn(ex, candidate(reports, store, name), [&done](std::exception_ptr e) {
            if (e) std::rethrow_exception(e);
            ++done;
        });
    while (done < 3) co_await work(50ms);
    co_await work(100ms);  // the observer hears the last resignation
    stop_observing.emit(asio::cancellation_type::terminal);

    // [deposed]
    redlock::fenced_write late("{report}:fence", terms.front());
    late.command("SET", "{report}:author", {"a deposed leader"});
    auto [ec, newest] = co_await redlock::async_fenced_write(store, late, asio::as_tuple(asio::use_awaitable));
    std::cout << "a late write with term " << terms.front() << ": " << ec.message() << " (the resource has seen term "
              << newest << ")\n";
    // [deposed]
    client.close();
    bool increasing = terms.size() == 3;
    for (std::size_t i = 1; i < terms.size(); ++i) increasing = increasing && terms[i] > terms[i - 1];
    if (broken || !increasing || ec != redlock::error::stale_token) {
        std::cerr << "the election did not hold: two leaders at once, terms not increasing, or a stale write passed\n";
        std::exit(1);
    }
    std::cout << "one leader at a time, terms increasing, the deposed leader's write refused\n";
}

int main(int argc, char** argv)
{
    asio::io_context ctx;
    const auto nodes = node_list(argc, argv);
    redlock::client client(ctx.get_executor(), nodes);
    asio::co_spawn(ctx, demo(client, nodes.front()), [](std::exception_ptr e) {
        if (!e) return;
        try {
            std::rethrow_exception(e);
        } catch (const std::exception& ex) {
            std::cerr << "error: " << ex.what() << "\n";
            std::exit(1);
        }
    });
    ctx.run();
}
