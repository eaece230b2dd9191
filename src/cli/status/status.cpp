// `redlock status`: per node, reachable or not, its server and version (HELLO's), the holder's token (the key's
// value), the remaining TTL and the fence counter, through mutex::async_inspect: it reads, it never changes anything;
// on a Redis Cluster, the key's slot and its master (cluster_shard.cpp). A semaphore's key is shown by semaphore.cpp.
#include "cli/common/exit_codes.hpp"
#include "cli/common/signals.hpp"
#include "cli/status/cluster_shard.hpp"
#include "cli/status/options.hpp"
#include "cli/status/semaphore.hpp"
#include "cli/status/status.hpp"

#include <redlock/client.hpp>
#include <redlock/key_layout.hpp>
#include <redlock/mutex.hpp>
#include <redlock/semaphore.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>

#include <csignal>
#include <map>
#include <optional>

namespace redlock::cli {
namespace {

namespace asio = boost::asio;
constexpr std::chrono::milliseconds node_deadline{2000};

std::string describe(const node_lock_view& v, const std::string& server)
{
    std::string line = "  " + v.node + "  ";
    if (v.ec) return line + "unreachable: " + (v.message.empty() ? v.ec.message() : v.message);
    line += "reachable  " + server;
    if (!v.holder && !v.message.empty() && !v.fence) return line + v.message;
    if (!v.holder) {
        line += "free";
    } else {
        line += "holder " + *v.holder + "  ";
        line += v.ttl ? "ttl " + std::to_string(v.ttl->count()) + " ms" : std::string("no expiry (not set by a lock)");
    }
    if (v.fence) line += "  fence " + std::to_string(*v.fence);
    if (!v.message.empty()) line += "  (" + v.message + ")";
    return line;
}

// The highest counter is at least the last token issued; the next token will be above it.
std::string fence_summary(const lock_inspection& state, const std::string& counter)
{
    std::size_t set = 0;
    for (const auto& v : state.nodes) set += v.fence.has_value();
    if (set == 0) return "fencing counter: not set (" + counter + "): no fenced grant yet";
    return "fencing counter: " + std::to_string(state.highest_fence()) + " (" + counter + ", highest of " +
           std::to_string(set) + " node(s)): the last fencing token issued is at most this, the next will be above it";
}

}  // namespace

namespace {

int run_status(const status_options& o)
{
    reporter report(o.output);
    asio::io_context ctx(1);
    const std::size_t n = o.nodes.size();
    std::vector<node_config> configs = o.nodes;
    for (auto& config : configs) {
        config.reconnect = false;  // one look, no retries: an unreachable node is the answer
        config.connect_timeout = node_deadline;
    }
    client nodes(ctx.get_executor(), configs);

    int interrupted = 0;
    asio::cancellation_signal cancel;
    asio::signal_set signals(ctx);
    for (int signo : {SIGINT, SIGTERM, SIGHUP})
        if (!signal_ignored(signo)) signals.add(signo);
    signals.async_wait([&](error_code ec, int signo) {
        if (ec) return;
        interrupted = signo;
        cancel.emit(asio::cancellation_type::terminal);
    });
    lock_inspection state;
    std::optional<semaphore_inspection> semaphore_state;
    diagnostics diag;
    diagnostics semaphore_diag;
    auto done = [&] {
        signals.cancel();
        nodes.close();
    };
    mutex(nodes, o.key)
        .async_inspect(diag, asio::bind_cancellation_slot(cancel.slot(), [&](error_code, lock_inspection result) {
                           state = std::move(result);
                           if (interrupted != 0 || !may_be_semaphore(state)) return done();
                           // The limit given is a fallback: the inspection reports the one the nodes store.
                           semaphore s(nodes, o.key, 1);
                           s.async_inspect(
                               semaphore_diag,
                               asio::bind_cancellation_slot(cancel.slot(), [&](error_code, semaphore_inspection seen) {
                                   if (is_semaphore(state, seen)) semaphore_state = std::move(seen);
                                   done();
                               }));
                       }));
    ctx.run();
    std::vector<server_identity> servers;  // as each node's HELLO said, in the order of the nodes
    for (const auto& node : nodes.stats().nodes) servers.push_back(node.server);
    if (interrupted != 0) {
        report.error("status: interrupted by " + signal_name(interrupted));
        return exit_code::signal_base + interrupted;
    }
    if (semaphore_state) return print_semaphore_status(*semaphore_state, servers, report);

    const std::size_t quorum = nodes.quorum();
    const std::size_t reachable = state.reachable();
    std::map<std::string, std::size_t> holders;
    for (const auto& v : state.nodes)
        if (v.holder) ++holders[*v.holder];
    std::string out =
        "lock '" + o.key + "' on " + std::to_string(n) + " node(s), quorum " + std::to_string(quorum) + "\n";
    for (std::size_t i = 0; i < state.nodes.size(); ++i)
        out += describe(state.nodes[i], server_column(servers, i)) + "\n";
    for (const auto& line : cluster_shard_lines(configs, o.key, node_deadline)) out += line + "\n";
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
    out += fence_summary(state, fence_counter_key(o.key)) + "\n";
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

}  // namespace

subcommand status_command()
{
    return {"status", status_help, &parse_and_run<parse_status, run_status>};
}

}  // namespace redlock::cli
