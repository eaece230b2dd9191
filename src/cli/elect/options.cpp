#include "cli/common/signals.hpp"
#include "cli/elect/options.hpp"

#include <boost/program_options.hpp>

#include <csignal>
#include <unistd.h>

namespace redlock::cli {

namespace po = boost::program_options;

const std::string_view elect_help = R"(usage: redlock elect [options] --key NAME [--proposal VALUE] -- COMMAND [ARG...]
       redlock elect --listen --key NAME

Campaigns to lead the election NAME on a quorum of Redis nodes, as `etcdctl elect` does, and runs COMMAND
while leading: one candidate's COMMAND at a time among every `redlock elect` of NAME, on any host. The
leadership is a lease kept by the watchdog; COMMAND is stopped before the lease can end if it cannot be
extended, or at once if it is lost, and also when redlock itself dies (it gets --kill-signal). When
COMMAND exits, redlock resigns, and the next candidate leads at once (woken by the resignation's
message); a candidate whose process died is replaced within --ttl. Each leadership has a term, a
fencing token above every earlier leader's: pass it to the resource, which then refuses a deposed
leader's late writes (doc/election.md).

With --listen, prints who leads, then each change, one line each, until a signal: TERM<TAB>VALUE, or
"none" when nobody leads (a value's backslashes, tabs and newlines as \\, \t and \n). Changes come by
message; a leader whose process died is seen gone when its key expires (within --ttl).

options:
  --nodes URL[,URL...]   Redis nodes (redis://, rediss://, unix://; a Redis Cluster is one node:
                         redis+cluster://HOST:PORT); default from $REDLOCK_NODES, else redis://127.0.0.1:6379
  --key NAME             the election's name (required, non-empty)
  --proposal VALUE       the value this candidate announces while it leads (default HOSTNAME:PID)
  --ttl DURATION         leadership lease TTL, default 10s (DURATION: 250ms, 10s, 2m, or plain milliseconds)
  --wait DURATION        how long to campaign; default: forever; 0: one attempt
  --again                after losing the leadership, stop COMMAND, campaign again and run COMMAND again
                         (default: exit 70)
  --kill-signal SIG      signal sent to COMMAND --kill-grace before the lease can end, when the watchdog
                         cannot extend it (default TERM); KILL when the lease ends
  --kill-grace DURATION  default 5s, at most half the TTL
  --listen               print the leaders instead of campaigning (no COMMAND)
  -v, --verbose          per-node outcomes and timings on stderr
  -q, --quiet            nothing but errors on stderr
  -h, --help             this text

COMMAND gets REDLOCK_KEY, REDLOCK_TOKEN (the lease token), REDLOCK_TERM and REDLOCK_FENCING_TOKEN (both the
term) in its environment; INT, TERM and HUP sent to redlock are forwarded to it.

exit codes: COMMAND's own (128+N if it died by signal N) when it ended while leading; 64 usage error; 69 no
quorum of nodes reachable until --wait ran out; 70 the leadership was lost, or about to end, while
COMMAND ran (COMMAND was stopped; not with --again); 75 another candidate led until --wait ran out;
126/127 COMMAND could not be run; 128+N interrupted by signal N while campaigning. --listen: 0 on INT,
TERM or HUP.
)";

namespace {

std::string default_proposal()
{
    char host[256] = {};
    if (::gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
    return std::string(host[0] != '\0' ? host : "localhost") + ":" + std::to_string(::getpid());
}

}  // namespace

std::optional<elect_options> parse_elect(const std::vector<std::string>& args)
{
    const auto [flags, command] = split_at_double_dash(args);
    po::options_description desc;
    desc.add_options()("key", po::value<std::string>())("proposal", po::value<std::string>())(
        "ttl", po::value<std::string>())("wait", po::value<std::string>())("again", po::bool_switch())(
        "listen", po::bool_switch())("kill-signal", po::value<std::string>())("kill-grace", po::value<std::string>());
    const command_line cl("elect", desc, flags,
                          "put the command after '--', as in: redlock elect --key NAME -- COMMAND [ARG...]");
    if (cl.help()) {
        write_stdout(elect_help);
        return std::nullopt;
    }

    elect_options o;
    o.output = cl.output();
    o.key = cl.key();
    o.ttl = cl.ttl(o.ttl);
    o.listen = cl.is_set("listen");
    if (o.listen) {
        for (const char* flag : {"proposal", "wait", "kill-signal", "kill-grace"})
            if (cl.given(flag)) throw cl.error(std::string("--") + flag + " is a candidate's: not with --listen");
        if (cl.is_set("again")) throw cl.error("--again is a candidate's: not with --listen");
        if (command) throw cl.error("--listen runs no command: drop what follows '--'");
        o.nodes = cl.nodes();
        return o;
    }
    o.proposal = cl.text("proposal").value_or(default_proposal());
    if (cl.given("wait")) o.wait = cl.duration("wait", ms(0));
    o.again = cl.is_set("again");
    o.kill_signal = SIGTERM;
    if (auto sig = cl.text("kill-signal")) {
        auto n = parse_signal(*sig);
        if (!n) throw cl.error("--kill-signal: '" + *sig + "' is not a signal (use a name like TERM or a number)");
        o.kill_signal = *n;
    }
    o.kill_grace = cl.duration("kill-grace", o.kill_grace);
    if (!command)
        throw cl.error(
            "no command: put it after '--', as in: redlock elect --key NAME -- COMMAND [ARG...] (or --listen)");
    o.command = checked_command(*command, cl.command());
    o.nodes = cl.nodes();
    return o;
}

}  // namespace redlock::cli
