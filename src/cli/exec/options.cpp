#include "cli/common/signals.hpp"
#include "cli/exec/options.hpp"

#include <boost/program_options.hpp>

#include <algorithm>
#include <csignal>

namespace redlock::cli {

namespace po = boost::program_options;

const std::string_view exec_help = R"(usage: redlock exec [options] -- COMMAND [ARG...]

Runs COMMAND while holding a distributed lock on a quorum of Redis nodes, and releases the lock when
COMMAND exits, whatever its exit code. As flock(1): without --shared a writer (one holder alone), with
--shared the read side (any number of --shared holders together, never beside a writer). A writer is the
plain lock; one whose first attempt finds readers holding waits ahead of readers that come after it. With
--limit N > 1, holds one permit of a semaphore instead: up to N commands run at once under the same --key.

options:
  --nodes URL[,URL...]   Redis nodes (redis://, rediss://, unix://; a Redis Cluster is one node:
                         redis+cluster://HOST:PORT; so is a master under Redis Sentinel:
                         redis+sentinel://SENTINEL:PORT/MASTER-NAME[?seed=SENTINEL2:PORT]); default from
                         $REDLOCK_NODES, else redis://127.0.0.1:6379
  --key NAME             lock or semaphore name (required, non-empty)
  --ttl DURATION         lease TTL, default 10s (DURATION: 250ms, 10s, 2m, or plain milliseconds)
  --wait DURATION        how long to wait for the lock; default: wait forever; 0: one attempt
  --limit N              a semaphore of N permits: at most N holders at once (default 1: a lock); a
                         permit needs Q = floor(N_nodes * N / (N + 1)) + 1 node grants (-v says Q)
  --shared               take the read side: run beside other --shared holders of the key; a plain
                         exec of the key waits for them, and they for it (doc/locks.md, "Read-write lock")
  --fair                 FIFO order among waiters, across processes and nodes (doc/locks.md)
  --waiter-ttl DURATION  a waiter that stops heartbeating (its process died) stops holding others back
                         within this time: the mark of a waiting plain exec (later readers wait behind
                         it), or with --fair its place in the queue; default 2s (with
                         --replica-acks, at least four times the node timeout plus the replica ack timeout)
  --fencing              obtain a fencing token: COMMAND gets it in REDLOCK_FENCING_TOKEN (a lock only)
  --no-watchdog          do not extend the lease; COMMAND is stopped before the TTL runs out
  --replica-acks N       a grant, fencing token or extension counts on a node only once N of its replicas
                         acknowledged it (WAIT), so a failover to one of them keeps the lock; default 0:
                         off (doc/replication.md says what it does and does not protect against)
  --replica-ack-timeout DURATION
                         how long each node's WAIT may block; default: the node timeout (min(50ms, ttl/10))
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
69 no quorum of nodes reachable, or with --replica-acks no quorum of grants their replicas acknowledged,
until --wait ran out; 70 lease lost, or about to end, while COMMAND ran
(COMMAND was stopped); 75 the lock stayed held by others (every permit taken) until --wait ran out; 126/127
COMMAND could not be run.
)";

std::optional<exec_options> parse_exec(const std::vector<std::string>& args)
{
    const auto [flags, command] = split_at_double_dash(args);
    po::options_description desc;
    desc.add_options()("key", po::value<std::string>())("ttl", po::value<std::string>())(
        "wait", po::value<std::string>())("limit", po::value<std::string>())("fair", po::bool_switch())(
        "shared", po::bool_switch())("waiter-ttl", po::value<std::string>())("fencing", po::bool_switch())(
        "no-watchdog", po::bool_switch())("kill-signal", po::value<std::string>())(
        "kill-grace", po::value<std::string>())("replica-acks", po::value<std::string>())("replica-ack-timeout",
                                                                                          po::value<std::string>());
    const command_line cl("exec", desc, flags,
                          "put the command after '--', as in: redlock exec --key NAME -- COMMAND [ARG...]");
    if (cl.help()) {
        write_stdout(exec_help);
        return std::nullopt;
    }

    exec_options o;
    o.limit = cl.limit();
    o.output = cl.output();
    o.key = cl.key();
    o.ttl = cl.ttl(o.ttl);
    if (cl.given("wait")) o.wait = cl.duration("wait", ms(0));
    o.fair = cl.is_set("fair");
    o.shared = cl.is_set("shared");
    if (o.shared && o.limit > 1)
        throw cl.error("--shared is a lock's read side: a semaphore (--limit > 1) has no sides");
    if (o.shared && o.fair) throw cl.error("--shared does not go with --fair: the read-write lock is writer-first");
    if (cl.given("waiter-ttl")) {
        if (o.shared) throw cl.error("--waiter-ttl is a waiting writer's or a fair waiter's: not with --shared");
        if (o.limit > 1 && !o.fair) throw cl.error("--waiter-ttl goes with --fair for a semaphore");
        o.waiter_ttl = cl.duration("waiter-ttl", ms(0));
    }
    o.watchdog = !cl.is_set("no-watchdog");
    o.fencing = cl.is_set("fencing");
    if (o.fencing && o.limit > 1)
        throw cl.error(
            "--fencing goes with a lock (--limit 1): a fencing token orders holders one after another, and a "
            "semaphore's holders run side by side");
    if (o.fencing && o.shared)
        throw cl.error("--fencing goes with the write side: readers run side by side, and write nothing to fence");
    o.kill_signal = SIGTERM;
    if (auto sig = cl.text("kill-signal")) {
        auto n = parse_signal(*sig);
        if (!n) throw cl.error("--kill-signal: '" + *sig + "' is not a signal (use a name like TERM or a number)");
        o.kill_signal = *n;
    }
    o.kill_grace = cl.duration("kill-grace", o.kill_grace);
    o.replica_acks = cl.replica_acks();
    o.replica_ack_timeout = cl.replica_ack_timeout();
    if (!cl.given("waiter-ttl") && o.replica_acks > 0) {
        // A waiting writer's (or a fair waiter's) heartbeats come up to waiter_ttl / 3 plus two request deadlines
        // apart, and a request that waits for replicas takes the node timeout (lock_options: min(50 ms, ttl / 10))
        // plus the WAIT's: a long --replica-ack-timeout stretches the default to four such deadlines.
        const auto node_timeout = std::max(ms(1), std::min(ms(50), o.ttl / 10));
        const auto wait = o.replica_ack_timeout > ms(0) ? o.replica_ack_timeout : node_timeout;
        o.waiter_ttl = std::max(o.waiter_ttl, 4 * (node_timeout + wait));
    }

    if (!command) throw cl.error("no command: put it after '--', as in: redlock exec --key NAME -- COMMAND [ARG...]");
    o.command = checked_command(*command, cl.command());
    o.nodes = cl.nodes();
    return o;
}

}  // namespace redlock::cli
