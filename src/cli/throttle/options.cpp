#include "cli/throttle/options.hpp"

#include <boost/program_options.hpp>

namespace redlock::cli {

namespace po = boost::program_options;

const std::string_view throttle_help =
    R"(usage: redlock throttle [options] --key NAME --rate N/PERIOD [-- COMMAND [ARG...]]

Waits until the rate limiter NAME has room for this call, takes it, then runs COMMAND in redlock's place
(exec: COMMAND's exit code, signals and process id are its own), or without COMMAND exits 0. Every process
that uses the same key and limit, on any host, shares the limit; only the node's clock counts.

options:
  --nodes URL            the Redis node: exactly one (a rate limiter lives on one node, see
                         doc/rate-limiting.md; a Redis Cluster is one: redis+cluster://HOST:PORT, and so
                         is a master under Redis Sentinel: redis+sentinel://SENTINEL:PORT/MASTER-NAME);
                         default from $REDLOCK_NODES, else redis://127.0.0.1:6379
  --key NAME             the limiter's key (required, non-empty)
  --rate N/PERIOD        N units per PERIOD (required): 10/s, 100/m, 5000/h, 20000/d, 3/1500ms
  --burst B              GCRA: up to B units more at once after an idle spell (default 0)
  --cost C               units this call takes (default 1); at most B + 1 (GCRA) or N (windows)
  --strategy S           gcra (default), fixed-window or sliding-window (doc/rate-limiting.md)
  --wait DURATION        how long to wait for room; default: wait forever; 0: one try
  -v, --verbose          the limiter's answer (remaining, reset) on stderr
  -q, --quiet            nothing but errors on stderr
  -h, --help             this text

exit codes: COMMAND's own when it ran (0 admitted, without COMMAND); 64 usage error (also a cost above the
limit, which no wait admits, and more than one node); 69 the node could not be reached until --wait ran out;
75 no room until --wait ran out; 126/127 COMMAND could not be run (checked before any room is taken);
128+N interrupted by signal N while waiting.
)";

std::optional<throttle_options> parse_throttle(const std::vector<std::string>& args)
{
    const auto [flags, command] = split_at_double_dash(args);
    po::options_description desc;
    desc.add_options()("key", po::value<std::string>())("rate", po::value<std::string>())(
        "burst", po::value<std::string>())("cost", po::value<std::string>())("strategy", po::value<std::string>())(
        "wait", po::value<std::string>());
    const command_line cl(
        "throttle", desc, flags,
        "put the command after '--', as in: redlock throttle --key NAME --rate 10/s -- COMMAND [ARG...]");
    if (cl.help()) {
        write_stdout(throttle_help);
        return std::nullopt;
    }
    throttle_options o;
    o.output = cl.output();
    o.key = cl.key();
    auto rate = cl.rate();
    if (!rate) throw cl.error("--rate N/PERIOD is required (10/s, 100/m, 3/1500ms)");
    o.rate = *rate;
    o.strategy = cl.strategy();
    if (cl.given("burst") && o.strategy != rate_strategy::gcra)
        throw cl.error("--burst goes with --strategy gcra: a window's burst is its rate");
    o.burst = cl.count("burst", 0, 0);
    o.cost = cl.count("cost", 1, 1);
    if (cl.given("wait")) o.wait = cl.duration("wait", ms(0));
    if (command) o.command = checked_command(*command, cl.command());
    auto nodes = cl.nodes();
    if (nodes.size() != 1)
        throw cl.error("--nodes: a rate limiter needs exactly one node (one Redis deployment), not " +
                       std::to_string(nodes.size()) +
                       ": over independent nodes a quorum rule either admits more than the limit or stops with any "
                       "node down (doc/rate-limiting.md, \"Over N nodes\"); a Redis Cluster is one node: "
                       "redis+cluster://HOST:PORT, and so is a master under Redis Sentinel: "
                       "redis+sentinel://SENTINEL:PORT/MASTER-NAME");
    o.node = std::move(nodes.front());
    return o;
}

}  // namespace redlock::cli
