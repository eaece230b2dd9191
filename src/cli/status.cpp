// `redlock status`: per node, reachable or not, the holder's token (the key's value), the remaining TTL and
// the fence counter.
// Plain GET and PTTL on one connection per node: it reads, it never changes anything.
#include "commands.hpp"
#include "exit_codes.hpp"
#include "signals.hpp"

#include <redlock/connection.hpp>
#include "primitives/mutex/fencing.hpp"
#include <redlock/lock_options.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <csignal>
#include <map>
#include <memory>

namespace redlock::cli {
namespace {

namespace asio = boost::asio;
constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);
constexpr std::chrono::milliseconds node_deadline{2000};

struct node_report {
    std::string url;
    bool done = false;
    bool reachable = false;
    std::string problem;  // why unreachable, or a reply that is not a lock's (WRONGTYPE)
    std::optional<std::string> holder;
    std::int64_t pttl = -2;
    std::optional<std::string> fence;  // the fence counter, if set
};

asio::awaitable<void> check_node(connection& conn, const std::string& key, node_report& r)
{
    diagnostics diag;
    auto [ec] = co_await conn.async_connect(diag, use_tuple);
    if (ec) {
        r.problem = diag.message().empty() ? ec.message() : std::string(diag.message());
        co_return;
    }
    request req;
    req.push("GET", key);
    req.push("PTTL", key);
    req.push("GET", fence_counter_key(key));
    req.set_timeout(node_deadline);
    response resp;
    auto [xec] = co_await conn.async_exec(req, resp, use_tuple);
    if (xec && xec != error::server_error) {
        r.problem = "connected, but the request failed: " + xec.message();
        co_return;
    }
    r.reachable = true;
    if (resp.size() != 3) {
        r.problem = "unexpected reply";
        co_return;
    }
    if (resp[0].is_error())
        r.problem = "the key is not a lock: " + std::string(resp[0].error_text());
    else if (!resp[0].is_null())
        r.holder = resp[0].text;
    if (auto t = resp[1].as_integer()) r.pttl = *t;
    if (r.pttl == -2) r.holder.reset();  // expired between the two commands
    if (!resp[2].is_null() && !resp[2].is_error()) r.fence = resp[2].text;
}

std::string describe(const node_report& r)
{
    std::string line = "  " + r.url + "  ";
    if (!r.reachable) return line + "unreachable: " + (r.problem.empty() ? "no answer" : r.problem);
    line += "reachable  ";
    if (!r.problem.empty()) return line + r.problem;
    if (!r.holder) {
        line += "free";
    } else {
        line += "holder " + *r.holder + "  ";
        line += r.pttl >= 0 ? "ttl " + std::to_string(r.pttl) + " ms" : std::string("no expiry (not set by a lock)");
    }
    if (r.fence) line += "  fence " + *r.fence;
    return line;
}

// The highest counter is at least the last token issued; the next token will be above it.
std::string fence_summary(const std::vector<node_report>& reports, const std::string& counter)
{
    std::optional<std::uint64_t> highest;
    std::size_t set = 0;
    for (const auto& r : reports) {
        if (!r.fence) continue;
        ++set;
        if (auto f = detail::parse_fence(*r.fence); f && (!highest || *f > *highest)) highest = f;
    }
    if (set == 0) return "fencing counter: not set (" + counter + "): no fenced grant yet";
    if (!highest) return "fencing counter: " + counter + " holds something that is not a number";
    return "fencing counter: " + std::to_string(*highest) + " (" + counter + ", highest of " + std::to_string(set) +
           " node(s)): the last fencing token issued is at most this, the next will be above it";
}

}  // namespace

int run_status(const status_options& o)
{
    reporter report(o.output);
    asio::io_context ctx(1);
    const std::size_t n = o.nodes.size();
    const std::size_t quorum = n / 2 + 1;
    std::vector<node_report> reports(n);
    std::vector<std::unique_ptr<connection>> conns;
    for (std::size_t i = 0; i < n; ++i) {
        auto config = o.nodes[i];
        config.reconnect = false;  // one look, no retries: an unreachable node is the answer
        config.connect_timeout = node_deadline;
        reports[i].url = config.to_string();
        conns.push_back(std::make_unique<connection>(ctx.get_executor(), config));
    }

    int interrupted = 0;
    std::size_t finished = 0;
    asio::signal_set signals(ctx);
    for (int signo : {SIGINT, SIGTERM, SIGHUP})
        if (!signal_ignored(signo)) signals.add(signo);
    auto stop_all = [&] {
        signals.cancel();
        for (auto& c : conns) c->close();
    };
    signals.async_wait([&](error_code ec, int signo) {
        if (ec) return;
        interrupted = signo;
        stop_all();
        ctx.stop();
    });
    for (std::size_t i = 0; i < n; ++i) {
        asio::co_spawn(ctx, check_node(*conns[i], o.key, reports[i]), [&, i](std::exception_ptr e) {
            if (e) reports[i].problem = "internal error";
            reports[i].done = true;
            conns[i]->close();
            if (++finished == n) {
                stop_all();
                ctx.stop();
            }
        });
    }
    ctx.run();
    if (interrupted != 0) {
        report.error("status: interrupted by " + signal_name(interrupted));
        return exit_code::signal_base + interrupted;
    }

    std::size_t reachable = 0;
    std::map<std::string, std::size_t> holders;
    for (const auto& r : reports) {
        if (r.reachable) ++reachable;
        if (r.holder) ++holders[*r.holder];
    }
    std::string out =
        "lock '" + o.key + "' on " + std::to_string(n) + " node(s), quorum " + std::to_string(quorum) + "\n";
    for (const auto& r : reports) out += describe(r) + "\n";
    if (holders.empty()) {
        out += "state: free on every reachable node\n";
    } else {
        auto best = holders.begin();
        for (auto it = holders.begin(); it != holders.end(); ++it)
            if (it->second > best->second) best = it;
        const std::string on = " on " + std::to_string(best->second) + " of " + std::to_string(n) + " nodes";
        if (best->second >= quorum)
            out += "state: held by " + best->first + on + " (a quorum)\n";
        else
            out += "state: no quorum agrees on a holder (" + best->first + on +
                   "): a lock being taken, a failed attempt's leftovers, or a holder whose nodes are down\n";
    }
    out += fence_summary(reports, fence_counter_key(o.key)) + "\n";
    write_stdout(out);

    if (reachable < quorum) {
        report.error("status: only " + std::to_string(reachable) + " of " + std::to_string(n) +
                     " nodes reachable; a quorum needs " + std::to_string(quorum));
        return exit_code::unavailable;
    }
    if (reachable < n)
        report.note("status: " + std::to_string(n - reachable) + " of " + std::to_string(n) +
                    " nodes unreachable; the lock still works on the quorum left");
    return exit_code::ok;
}

}  // namespace redlock::cli
