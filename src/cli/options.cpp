#include "duration.hpp"
#include "options.hpp"
#include "signals.hpp"

#include <redlock/semaphore.hpp>

#include <boost/program_options.hpp>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <csignal>
#include <cstdlib>
#include <tuple>

namespace redlock::cli {
namespace {

namespace po = boost::program_options;

constexpr const char* default_node = "redis://127.0.0.1:6379";

// Smaller is meaningless over a network, and the library's drift allowance alone is 2 ms + 1%.
constexpr ms min_ttl{10};

const char* exec_help = R"(usage: redlock exec [options] -- COMMAND [ARG...]

Runs COMMAND while holding a distributed lock on a quorum of Redis nodes, and releases the lock when
COMMAND exits, whatever its exit code. With --limit N > 1, holds one permit of a semaphore instead: up to N
commands run at once under the same --key.

options:
  --nodes URL[,URL...]   Redis nodes (redis://, rediss://, unix://); default from $REDLOCK_NODES, else
                         redis://127.0.0.1:6379
  --key NAME             lock or semaphore name (required, non-empty)
  --ttl DURATION         lease TTL, default 10s (DURATION: 250ms, 10s, 2m, or plain milliseconds)
  --wait DURATION        how long to wait for the lock; default: wait forever; 0: one attempt
  --limit N              a semaphore of N permits: at most N holders at once (default 1: a lock); a
                         permit needs Q = floor(N_nodes * N / (N + 1)) + 1 node grants (-v says Q)
  --fair                 FIFO order among waiters, across processes and nodes (doc/locks.md)
  --waiter-ttl DURATION  with --fair: a waiter that stops heartbeating (its process died) leaves the
                         queue within this time; default 2s
  --fencing              obtain a fencing token: COMMAND gets it in REDLOCK_FENCING_TOKEN (a lock only)
  --no-watchdog          do not extend the lease; COMMAND is stopped before the TTL runs out
  --kill-signal SIG      signal sent to COMMAND --kill-grace before the lease can end, when the watchdog
                         cannot extend it (default TERM); KILL when the lease ends
  --kill-grace DURATION  default 5s, at most half the TTL
  -v, --verbose          per-node outcomes and timings on stderr
  -q, --quiet            nothing but errors on stderr
  -h, --help             this text

COMMAND gets REDLOCK_KEY and REDLOCK_TOKEN (the lease token), with --fencing REDLOCK_FENCING_TOKEN (a
number above every earlier holder's), and with --limit N > 1 REDLOCK_PERMIT_ID (the permit's id, also its
REDLOCK_TOKEN) and REDLOCK_LIMIT (N), in its environment; INT, TERM and HUP sent to redlock are forwarded
to it.

exit codes: COMMAND's own (128+N if it died by signal N) when the lease held to the end; 64 usage error;
69 no quorum of nodes reachable until --wait ran out; 70 lease lost, or about to end, while COMMAND ran
(COMMAND was stopped); 75 the lock stayed held by others (every permit taken) until --wait ran out; 126/127
COMMAND could not be run.
)";

const char* status_help = R"(usage: redlock status [--nodes URL[,URL...]] --key NAME [-v]

Shows, per node, whether it is reachable, who holds the lock (the token stored in the key), its remaining
TTL and the lock's fence counter, then whether a quorum agrees on one holder and the highest counter.
When NAME is a semaphore (redlock exec --limit N), shows per node its limit, the permits held and
available, the fair waiters and each permit (id, count, TTL), then the permits held on a quorum, the
quorum and how many node failures the semaphore tolerates.

exit codes: 0 when a quorum of nodes is reachable (all of them, or a note says which are not);
69 when fewer than a quorum are reachable; 64 usage error.
)";

const char* bench_help =
    R"(usage: redlock bench [--nodes URL[,URL...]]
                     [--scenario uncontended|contended|handoff|hold|limiter|semaphore] [--clients C] [--workers W]
                     [--leases L] [--limit L] [--duration D] [--ttl T] [--fencing] [--fair] [--rate N/PERIOD]
                     [--burst B] [--strategy S] [--json]

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
A client has one connection per node, as a separate process would; the W workers of a client are coroutines
sharing it, as the requests of one HTTP service share its client (--clients 1 --workers 64). One caller in
sequence: --clients 1 --workers 1; separate processes: --clients 64 --workers 1.
options: --clients C, --workers W, --duration D (default 5s), --ttl T (default 10s), --fencing (every lock
takes a fencing token), --json (one JSON object on stdout instead of the table), -v.

exit codes: 0 after the run; 69 when a quorum of nodes is not reachable at the start; 64 usage error.
)";

const char* throttle_help = R"(usage: redlock throttle [options] --key NAME --rate N/PERIOD [-- COMMAND [ARG...]]

Waits until the rate limiter NAME has room for this call, takes it, then runs COMMAND in redlock's place
(exec: COMMAND's exit code, signals and process id are its own), or without COMMAND exits 0. Every process
that uses the same key and limit, on any host, shares the limit; only the node's clock counts.

options:
  --nodes URL            the Redis node: exactly one (a rate limiter lives on one node, see
                         doc/rate-limiting.md); default from $REDLOCK_NODES, else redis://127.0.0.1:6379
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

const char* general_help = R"(usage: redlock <command> [options]

commands:
  exec [options] -- COMMAND [ARG...]   run COMMAND under a distributed lock
  throttle --key NAME --rate N/PERIOD [-- COMMAND [ARG...]]
                                       wait for room in a rate limiter, then run COMMAND
  status --key NAME                    who holds a lock or a semaphore, remaining TTL per node
  bench [--scenario ...]               lock, semaphore and limiter latency and throughput of a deployment
  help                                 this text

'redlock <command> --help' describes each command. Nodes come from --nodes URL[,URL...], else
$REDLOCK_NODES, else redis://127.0.0.1:6379.
)";

constexpr auto parser_style = po::command_line_style::default_style & ~po::command_line_style::allow_guessing;

// Parses `args` against `desc`; positional arguments are refused (exec takes its command after "--").
po::variables_map parse_into(const po::options_description& desc, const std::vector<std::string>& args,
                             const std::string& command)
{
    po::options_description all;
    all.add(desc);
    all.add_options()("_positional", po::value<std::vector<std::string>>());
    po::positional_options_description positional;
    positional.add("_positional", -1);
    po::variables_map vm;
    try {
        po::store(po::command_line_parser(args).options(all).positional(positional).style(parser_style).run(), vm);
        po::notify(vm);
    } catch (const po::error& e) {
        throw usage_error(e.what(), command);
    }
    if (vm.count("_positional")) {
        const auto& extra = vm["_positional"].as<std::vector<std::string>>();
        if (command == "exec")
            throw usage_error("unexpected argument '" + extra.front() +
                                  "': put the command after '--', as in: redlock exec --key NAME -- COMMAND [ARG...]",
                              command);
        if (command == "throttle")
            throw usage_error("unexpected argument '" + extra.front() +
                                  "': put the command after '--', as in: redlock throttle --key NAME --rate 10/s -- "
                                  "COMMAND [ARG...]",
                              command);
        throw usage_error("unexpected argument '" + extra.front() + "'", command);
    }
    return vm;
}

std::optional<std::string> string_flag(const po::variables_map& vm, const char* name)
{
    if (!vm.count(name)) return std::nullopt;
    return vm[name].as<std::string>();
}

ms duration_flag(const po::variables_map& vm, const char* name, ms fallback, const std::string& command)
{
    auto text = string_flag(vm, name);
    if (!text) return fallback;
    static_assert(max_duration == std::chrono::hours(87'600), "the message below names the limit");
    duration_error why{};
    auto d = parse_duration(*text, &why);
    if (!d && why == duration_error::too_long)
        throw usage_error(std::string("--") + name + ": '" + *text + "' is too long (at most 87600h, 10 years)",
                          command);
    if (!d) {
        throw usage_error(std::string("--") + name + ": '" + *text +
                              "' is not a duration (use 250ms, 10s, 2m, or plain milliseconds)",
                          command);
    }
    return *d;
}

int positive_int_flag(const po::variables_map& vm, const char* name, int fallback, const std::string& command)
{
    auto text = string_flag(vm, name);
    if (!text) return fallback;
    int n = 0;
    auto [end, ec] = std::from_chars(text->data(), text->data() + text->size(), n);
    if (text->empty() || ec != std::errc{} || end != text->data() + text->size() || n < 1)
        throw usage_error(std::string("--") + name + ": '" + *text + "' is not a positive integer", command);
    return n;
}

rate_strategy strategy_flag(const po::variables_map& vm, const std::string& command)
{
    auto text = string_flag(vm, "strategy");
    if (!text || *text == "gcra") return rate_strategy::gcra;
    if (*text == "fixed-window") return rate_strategy::fixed_window;
    if (*text == "sliding-window") return rate_strategy::sliding_window;
    throw usage_error("--strategy: '" + *text + "' is not a strategy (gcra, fixed-window or sliding-window)", command);
}

std::optional<rate_spec> rate_flag(const po::variables_map& vm, const std::string& command)
{
    auto text = string_flag(vm, "rate");
    if (!text) return std::nullopt;
    auto r = parse_rate(*text);
    if (!r)
        throw usage_error("--rate: '" + *text +
                              "' is not a rate: N/PERIOD with N from 1 to 10^12 and PERIOD s, m, h, d or a DURATION "
                              "up to 720h (10/s, 100/m, 3/1500ms)",
                          command);
    return r;
}

// A whole number from `least` up; `fallback` when the flag is absent.
std::int64_t count_flag(const po::variables_map& vm, const char* name, std::int64_t fallback, std::int64_t least,
                        const std::string& command)
{
    auto text = string_flag(vm, name);
    if (!text) return fallback;
    std::int64_t n = 0;
    auto [end, ec] = std::from_chars(text->data(), text->data() + text->size(), n);
    if (text->empty() || ec != std::errc{} || end != text->data() + text->size() || n < least)
        throw usage_error(
            std::string("--") + name + ": '" + *text + "' is not a whole number from " + std::to_string(least) + " up",
            command);
    return n;
}

// --limit: 1 (a lock, the default) up to the library's semaphore::max_limit.
std::int64_t limit_flag(const po::variables_map& vm, const std::string& command)
{
    const int limit = positive_int_flag(vm, "limit", 1, command);
    static_assert(semaphore::max_limit == 1'000'000, "the message below names the limit");
    if (limit > semaphore::max_limit) throw usage_error("--limit: at most 1000000 permits", command);
    return limit;
}

std::string key_flag(const po::variables_map& vm, const std::string& command)
{
    auto key = string_flag(vm, "key");
    if (!key) throw usage_error("--key NAME is required", command);
    if (key->empty()) throw usage_error("--key must not be empty", command);
    return *key;
}

ms ttl_flag(const po::variables_map& vm, ms fallback, const std::string& command)
{
    const ms ttl = duration_flag(vm, "ttl", fallback, command);
    if (ttl <= ms(0)) throw usage_error("--ttl must be positive", command);
    if (ttl < min_ttl) throw usage_error("--ttl must be at least " + format_duration(min_ttl), command);
    return ttl;
}

verbosity verbosity_flags(const po::variables_map& vm, const std::string& command)
{
    const bool verbose = vm["verbose"].as<bool>();
    const bool quiet = vm["quiet"].as<bool>();
    if (verbose && quiet) throw usage_error("-v and -q contradict each other", command);
    return verbose ? verbosity::verbose : quiet ? verbosity::quiet : verbosity::normal;
}

std::vector<std::string> nodes_flag(const po::variables_map& vm)
{
    if (!vm.count("nodes")) return {};
    return vm["nodes"].as<std::vector<std::string>>();
}

void add_common(po::options_description& desc)
{
    desc.add_options()("help,h", po::bool_switch())("nodes", po::value<std::vector<std::string>>()->composing())(
        "verbose,v", po::bool_switch())("quiet,q", po::bool_switch());
}

std::vector<std::string> split_urls(const std::string& list)
{
    std::vector<std::string> out;
    std::string current;
    for (char c : list) {
        if (c == ',' || std::isspace(static_cast<unsigned char>(c))) {
            if (!current.empty()) out.push_back(std::move(current));
            current.clear();
        } else {
            current += c;
        }
    }
    if (!current.empty()) out.push_back(std::move(current));
    return out;
}

}  // namespace

std::string general_usage()
{
    return general_help;
}

std::vector<node_config> parse_nodes(const std::vector<std::string>& flag_values, const std::string& command)
{
    std::vector<std::string> urls;
    std::string source = "--nodes";
    if (!flag_values.empty()) {
        for (const auto& v : flag_values)
            for (auto& u : split_urls(v)) urls.push_back(std::move(u));
        if (urls.empty()) throw usage_error("--nodes is empty: give at least one node URL", command);
    } else if (const char* env = std::getenv("REDLOCK_NODES"); env != nullptr && *env != '\0') {
        urls = split_urls(env);
        source = "$REDLOCK_NODES";
        if (urls.empty()) throw usage_error("$REDLOCK_NODES holds no node URL", command);
    } else {
        urls.push_back(default_node);
    }

    std::vector<node_config> nodes;
    for (const auto& url : urls) {
        diagnostics diag;
        auto parsed = parse_url(url, diag);
        if (!parsed) {
            std::string why(diag.message());
            if (why.empty()) why = "invalid node URL '" + url + "'";
            throw usage_error("bad node URL in " + source + ": " + why, command);
        }
        if (parsed->client_name.empty()) parsed->client_name = "redlock-cli";  // to find us in CLIENT LIST
        nodes.push_back(std::move(*parsed));
    }
    // The same node twice would vote twice: a "quorum" of 3 on 2 real nodes.
    auto identity = [](const node_config& n) {
        std::string host = n.host;
        std::transform(host.begin(), host.end(), host.begin(),
                       [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
        return std::tuple(host, n.port, n.path, n.db);
    };
    for (std::size_t i = 0; i < nodes.size(); ++i)
        for (std::size_t j = 0; j < i; ++j)
            if (identity(nodes[i]) == identity(nodes[j]))
                throw usage_error("node " + nodes[i].to_string() + " is listed twice in " + source +
                                      ": each node must be an independent Redis master",
                                  command);
    return nodes;
}

std::optional<exec_options> parse_exec(const std::vector<std::string>& args)
{
    const std::string command = "exec";
    // Everything after the first "--" is the command, untouched (its flags are not ours).
    auto separator = std::find(args.begin(), args.end(), "--");
    const std::vector<std::string> ours(args.begin(), separator);

    po::options_description desc;
    add_common(desc);
    desc.add_options()("key", po::value<std::string>())("ttl", po::value<std::string>())(
        "wait", po::value<std::string>())("limit", po::value<std::string>())("fair", po::bool_switch())(
        "waiter-ttl", po::value<std::string>())("fencing", po::bool_switch())("no-watchdog", po::bool_switch())(
        "kill-signal", po::value<std::string>())("kill-grace", po::value<std::string>());
    auto vm = parse_into(desc, ours, command);
    if (vm["help"].as<bool>()) {
        write_stdout(exec_help);
        return std::nullopt;
    }

    exec_options o;
    o.limit = limit_flag(vm, command);
    o.output = verbosity_flags(vm, command);
    o.key = key_flag(vm, command);
    o.ttl = ttl_flag(vm, o.ttl, command);
    if (vm.count("wait")) o.wait = duration_flag(vm, "wait", ms(0), command);
    o.fair = vm["fair"].as<bool>();
    if (vm.count("waiter-ttl")) {
        if (!o.fair) throw usage_error("--waiter-ttl goes with --fair", command);
        o.waiter_ttl = duration_flag(vm, "waiter-ttl", ms(0), command);
    }
    o.watchdog = !vm["no-watchdog"].as<bool>();
    o.fencing = vm["fencing"].as<bool>();
    if (o.fencing && o.limit > 1)
        throw usage_error(
            "--fencing goes with a lock (--limit 1): a fencing token orders holders one after another, "
            "and a semaphore's holders run side by side",
            command);
    o.kill_signal = SIGTERM;
    if (auto sig = string_flag(vm, "kill-signal")) {
        auto n = parse_signal(*sig);
        if (!n)
            throw usage_error("--kill-signal: '" + *sig + "' is not a signal (use a name like TERM or a number)",
                              command);
        o.kill_signal = *n;
    }
    o.kill_grace = duration_flag(vm, "kill-grace", o.kill_grace, command);

    if (separator == args.end())
        throw usage_error("no command: put it after '--', as in: redlock exec --key NAME -- COMMAND [ARG...]", command);
    o.command.assign(separator + 1, args.end());
    if (o.command.empty()) throw usage_error("no command after '--'", command);
    if (o.command.front().empty()) throw usage_error("the command name is empty", command);
    o.nodes = parse_nodes(nodes_flag(vm), command);
    return o;
}

std::optional<status_options> parse_status(const std::vector<std::string>& args)
{
    const std::string command = "status";
    po::options_description desc;
    add_common(desc);
    desc.add_options()("key", po::value<std::string>());
    auto vm = parse_into(desc, args, command);
    if (vm["help"].as<bool>()) {
        write_stdout(status_help);
        return std::nullopt;
    }
    status_options o;
    o.output = verbosity_flags(vm, command);
    o.key = key_flag(vm, command);
    o.nodes = parse_nodes(nodes_flag(vm), command);
    return o;
}

std::optional<bench_options> parse_bench(const std::vector<std::string>& args)
{
    const std::string command = "bench";
    po::options_description desc;
    add_common(desc);
    desc.add_options()("scenario", po::value<std::string>())("clients", po::value<std::string>())(
        "workers", po::value<std::string>())("duration", po::value<std::string>())("ttl", po::value<std::string>())(
        "fencing", po::bool_switch())("fair", po::bool_switch())("json", po::bool_switch())(
        "leases", po::value<std::string>())("limit", po::value<std::string>())("rate", po::value<std::string>())(
        "burst", po::value<std::string>())("strategy", po::value<std::string>());
    auto vm = parse_into(desc, args, command);
    if (vm["help"].as<bool>()) {
        write_stdout(bench_help);
        return std::nullopt;
    }
    bench_options o;
    o.output = verbosity_flags(vm, command);
    if (auto s = string_flag(vm, "scenario")) {
        if (*s == "uncontended")
            o.kind = bench_options::scenario::uncontended;
        else if (*s == "contended")
            o.kind = bench_options::scenario::contended;
        else if (*s == "handoff")
            o.kind = bench_options::scenario::handoff;
        else if (*s == "hold")
            o.kind = bench_options::scenario::hold;
        else if (*s == "limiter")
            o.kind = bench_options::scenario::limiter;
        else if (*s == "semaphore")
            o.kind = bench_options::scenario::semaphore;
        else
            throw usage_error("--scenario: '" + *s +
                                  "' is not a scenario (uncontended, contended, handoff, hold, limiter or semaphore)",
                              command);
    }
    const bool handoff = o.kind == bench_options::scenario::handoff;
    const bool semaphore_run = o.kind == bench_options::scenario::semaphore;
    const bool contended = o.kind == bench_options::scenario::contended || handoff || semaphore_run;
    o.clients = positive_int_flag(vm, "clients", semaphore_run ? 8 : handoff ? 10 : contended ? 4 : o.clients, command);
    if (o.clients > 1024) throw usage_error("--clients: at most 1024", command);
    o.workers = positive_int_flag(vm, "workers", contended ? 1 : o.workers, command);
    if (o.workers > 4096) throw usage_error("--workers: at most 4096", command);
    o.duration = duration_flag(vm, "duration", o.duration, command);
    if (o.duration <= ms(0)) throw usage_error("--duration must be positive", command);
    o.ttl = ttl_flag(vm, o.ttl, command);
    o.fencing = vm["fencing"].as<bool>();
    o.fair = vm["fair"].as<bool>();
    if (o.fair && !handoff && !semaphore_run)
        throw usage_error("--fair: only with --scenario handoff or semaphore", command);
    if (vm.count("limit") && !semaphore_run) throw usage_error("--limit goes with --scenario semaphore", command);
    if (semaphore_run && o.fencing)
        throw usage_error("--fencing: a semaphore has no fencing tokens (its holders run side by side)", command);
    if (vm.count("limit")) o.limit = static_cast<int>(limit_flag(vm, command));
    o.json = vm["json"].as<bool>();
    o.leases = positive_int_flag(vm, "leases", o.leases, command);
    if (o.leases > 10'000'000) throw usage_error("--leases: at most 10000000", command);
    const bool limiter = o.kind == bench_options::scenario::limiter;
    if (!limiter && (vm.count("rate") || vm.count("burst") || vm.count("strategy")))
        throw usage_error("--rate, --burst and --strategy go with --scenario limiter", command);
    o.strategy = strategy_flag(vm, command);
    if (auto r = rate_flag(vm, command)) o.rate = *r;
    o.burst = count_flag(vm, "burst", o.strategy == rate_strategy::gcra ? o.burst : 0, 0, command);
    o.nodes = parse_nodes(nodes_flag(vm), command);
    return o;
}

}  // namespace redlock::cli

namespace redlock::cli {

std::optional<throttle_options> parse_throttle(const std::vector<std::string>& args)
{
    const std::string command = "throttle";
    // Everything after the first "--" is the command, untouched (its flags are not ours).
    auto separator = std::find(args.begin(), args.end(), "--");
    const std::vector<std::string> ours(args.begin(), separator);

    po::options_description desc;
    add_common(desc);
    desc.add_options()("key", po::value<std::string>())("rate", po::value<std::string>())(
        "burst", po::value<std::string>())("cost", po::value<std::string>())("strategy", po::value<std::string>())(
        "wait", po::value<std::string>());
    auto vm = parse_into(desc, ours, command);
    if (vm["help"].as<bool>()) {
        write_stdout(throttle_help);
        return std::nullopt;
    }
    throttle_options o;
    o.output = verbosity_flags(vm, command);
    o.key = key_flag(vm, command);
    auto rate = rate_flag(vm, command);
    if (!rate) throw usage_error("--rate N/PERIOD is required (10/s, 100/m, 3/1500ms)", command);
    o.rate = *rate;
    o.strategy = strategy_flag(vm, command);
    if (vm.count("burst") && o.strategy != rate_strategy::gcra)
        throw usage_error("--burst goes with --strategy gcra: a window's burst is its rate", command);
    o.burst = count_flag(vm, "burst", 0, 0, command);
    o.cost = count_flag(vm, "cost", 1, 1, command);
    if (vm.count("wait")) o.wait = duration_flag(vm, "wait", ms(0), command);
    if (separator != args.end()) {
        o.command.assign(separator + 1, args.end());
        if (o.command.empty()) throw usage_error("no command after '--'", command);
        if (o.command.front().empty()) throw usage_error("the command name is empty", command);
    }
    o.nodes = parse_nodes(nodes_flag(vm), command);
    return o;
}

}  // namespace redlock::cli
