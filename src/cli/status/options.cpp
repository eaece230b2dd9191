#include "cli/common/command_line.hpp"
#include "cli/status/options.hpp"

#include <boost/program_options.hpp>

namespace redlock::cli {

namespace po = boost::program_options;

const std::string_view status_help = R"(usage: redlock status [--nodes URL[,URL...]] --key NAME [-v]

Shows, per node, whether it is reachable and its server (redis 7.0.15, valkey 8.0.1), who holds the lock
(the token stored in the key), its remaining TTL and the lock's fence counter, then whether a quorum
agrees on one holder and the highest counter.
When NAME is a semaphore (redlock exec --limit N), shows per node its limit, the permits held and
available, the fair waiters and each permit (id, count, TTL), then the permits held on a quorum, the
quorum and how many node failures the semaphore tolerates.

exit codes: 0 when a quorum of nodes is reachable (all of them, or a note says which are not);
69 when fewer than a quorum are reachable; 64 usage error.
)";

std::optional<status_options> parse_status(const std::vector<std::string>& args)
{
    po::options_description desc;
    desc.add_options()("key", po::value<std::string>());
    const command_line cl("status", desc, args);
    if (cl.help()) {
        write_stdout(status_help);
        return std::nullopt;
    }
    status_options o;
    o.output = cl.output();
    o.key = cl.key();
    o.nodes = cl.nodes();
    return o;
}

}  // namespace redlock::cli
