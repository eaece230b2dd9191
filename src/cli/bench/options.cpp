#include "cli/bench/options.hpp"

#include <boost/program_options.hpp>

#include <algorithm>
#include <array>
#include <utility>

namespace redlock::cli {

namespace po = boost::program_options;

const std::string_view bench_help = R"(usage: redlock bench [--nodes URL[,URL...]]
                     [--scenario uncontended|contended|handoff|hold|limiter|semaphore|cache] [--clients C]
                     [--workers W] [--leases L] [--limit L] [--duration D] [--ttl T] [--fencing] [--fair]
                     [--rate N/PERIOD] [--burst B] [--strategy S] [--json]

Measures lock latency and throughput against the nodes, and the client CPU time and allocations per
lock + release.
  uncontended  C clients x W workers, each worker locking and releasing its own key in a loop (default;
               default 1 client x 64 workers)
  contended    the workers on one key, each holding it about 1 ms; also measures the handoff gap (from one
               release completing to the next acquire completing) (default 4 clients x 1 worker)
  handoff      as contended (default 10 clients x 1 worker), but a worker that released waits until another
               took the lock before it asks again: every grant is a handoff. Also reports the attempts per
               grant, what started each retry (a release message or a timer: polling) and the commands the
               nodes ran per grant (CONFIG RESETSTAT before, INFO commandstats after: run it alone on the
               nodes). --fair: a fair lock
  hold         one client takes L leases (--leases, default 100000) with the watchdog, holds them for the
               duration and releases them: memory per lease, client CPU while the watchdog extends them,
               leases lost (none expected)
  limiter      rate limiter decisions: each worker asks its own key's limiter (--rate, default 1000/s;
               --burst, default 100; --strategy gcra|fixed-window|sliding-window) for one unit in a loop,
               without waiting; reports decisions/s, their latency, and how many were admitted (one node)
  semaphore    the workers (default 8 clients x 1 worker) contend for the --limit L permits of one semaphore
               (default: half the workers), each holding a permit about 1 ms, releasing it and asking again
               after a pause of 0 to 3 ms: permits/s, acquire latency, apart for the acquires that found
               room at once and those that waited, and the most permits held at once (never above L).
               --fair: a fair semaphore
  cache        C cache guards x W workers (default 1 x 64), each worker reading its own key through
               cache_guard::async_get_or_load (loaded once first: every measured read is a hit), values kept on
               the first node; then the same reads as plain GETs on the same connections: hit latency beside
               the GET it costs
A client has one connection per node, as a separate process would; the W workers of a client are coroutines
sharing it, as the requests of one HTTP service share its client (--clients 1 --workers 64). One caller in
sequence: --clients 1 --workers 1; separate processes: --clients 64 --workers 1.
options: --clients C, --workers W, --duration D (default 5s), --ttl T (default 10s), --fencing (every lock
takes a fencing token), --replica-acks N and --replica-ack-timeout D (uncontended, contended, handoff,
semaphore: each grant waits for N replicas, as redlock exec --replica-acks does), --json (one JSON object on
stdout instead of the table), -v.

exit codes: 0 after the run; 69 when a quorum of nodes is not reachable at the start; 64 usage error.
)";

std::optional<bench_options> parse_bench(const std::vector<std::string>& args)
{
    po::options_description desc;
    desc.add_options()("scenario", po::value<std::string>())("clients", po::value<std::string>())(
        "workers", po::value<std::string>())("duration", po::value<std::string>())("ttl", po::value<std::string>())(
        "fencing", po::bool_switch())("fair", po::bool_switch())("json", po::bool_switch())(
        "leases", po::value<std::string>())("limit", po::value<std::string>())("rate", po::value<std::string>())(
        "burst", po::value<std::string>())("strategy", po::value<std::string>())(
        "replica-acks", po::value<std::string>())("replica-ack-timeout", po::value<std::string>());
    const command_line cl("bench", desc, args);
    if (cl.help()) {
        write_stdout(bench_help);
        return std::nullopt;
    }
    using scenario = bench_options::scenario;
    bench_options o;
    o.output = cl.output();
    if (auto s = cl.text("scenario")) {
        constexpr std::array<std::pair<std::string_view, scenario>, 7> names{{{"uncontended", scenario::uncontended},
                                                                              {"contended", scenario::contended},
                                                                              {"handoff", scenario::handoff},
                                                                              {"hold", scenario::hold},
                                                                              {"limiter", scenario::limiter},
                                                                              {"semaphore", scenario::semaphore},
                                                                              {"cache", scenario::cache}}};
        auto named = std::find_if(names.begin(), names.end(), [&](const auto& n) { return n.first == *s; });
        if (named == names.end())
            throw cl.error("--scenario: '" + *s +
                           "' is not a scenario (uncontended, contended, handoff, hold, limiter, semaphore or cache)");
        o.kind = named->second;
    }
    const bool handoff = o.kind == scenario::handoff;
    const bool semaphore_run = o.kind == scenario::semaphore;
    const bool limiter = o.kind == scenario::limiter;
    const bool contended = o.kind == scenario::contended || handoff || semaphore_run;
    o.clients = cl.positive_int("clients", semaphore_run ? 8 : handoff ? 10 : contended ? 4 : o.clients);
    if (o.clients > 1024) throw cl.error("--clients: at most 1024");
    o.workers = cl.positive_int("workers", contended ? 1 : o.workers);
    if (o.workers > 4096) throw cl.error("--workers: at most 4096");
    o.duration = cl.duration("duration", o.duration);
    if (o.duration <= ms(0)) throw cl.error("--duration must be positive");
    o.ttl = cl.ttl(o.ttl);
    o.fencing = cl.is_set("fencing");
    o.fair = cl.is_set("fair");
    if (o.fair && !handoff && !semaphore_run) throw cl.error("--fair: only with --scenario handoff or semaphore");
    if (cl.given("limit") && !semaphore_run) throw cl.error("--limit goes with --scenario semaphore");
    if (semaphore_run && o.fencing)
        throw cl.error("--fencing: a semaphore has no fencing tokens (its holders run side by side)");
    if (cl.given("limit")) o.limit = static_cast<int>(cl.limit());
    o.replica_acks = cl.replica_acks();
    o.replica_ack_timeout = cl.replica_ack_timeout();
    if (o.replica_acks > 0 && (limiter || o.kind == scenario::hold || o.kind == scenario::cache))
        throw cl.error("--replica-acks goes with the lock and semaphore scenarios");
    o.json = cl.is_set("json");
    o.leases = cl.positive_int("leases", o.leases);
    if (o.leases > 10'000'000) throw cl.error("--leases: at most 10000000");
    if (!limiter && (cl.given("rate") || cl.given("burst") || cl.given("strategy")))
        throw cl.error("--rate, --burst and --strategy go with --scenario limiter");
    o.strategy = cl.strategy();
    if (auto r = cl.rate()) o.rate = *r;
    o.burst = cl.count("burst", o.strategy == rate_strategy::gcra ? o.burst : 0, 0);
    o.nodes = cl.nodes();
    if (limiter && o.nodes.size() != 1)
        throw cl.error("--scenario limiter: a rate limiter needs exactly one node (one Redis deployment), not " +
                       std::to_string(o.nodes.size()) + " (doc/rate-limiting.md, \"Over N nodes\")");
    return o;
}

}  // namespace redlock::cli
