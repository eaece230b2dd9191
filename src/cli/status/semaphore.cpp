#include "cli/common/exit_codes.hpp"
#include "cli/status/semaphore.hpp"

#include <algorithm>
#include <string>

namespace redlock::cli {
namespace {

bool wrong_type(const std::string& message)
{
    return message.find("WRONGTYPE") != std::string::npos;
}

std::string permit_line(const permit_view& p)
{
    return p.id + "  count " + std::to_string(p.count) + "  ttl " + std::to_string(p.ttl.count()) + " ms";
}

std::string describe(const node_semaphore_view& v, const std::string& server)
{
    std::string out = "  " + v.node + "  ";
    if (v.ec) return out + "unreachable: " + (v.message.empty() ? v.ec.message() : v.message) + "\n";
    out += "reachable  " + server + "limit " + (v.limit ? std::to_string(*v.limit) : std::string("none stored")) +
           "  held " + std::to_string(v.held());
    if (auto free = v.available()) out += "  available " + std::to_string(*free);
    out += "  waiters " + std::to_string(v.waiters);
    if (!v.message.empty()) out += "  (" + v.message + ")";
    out += "\n";
    for (const auto& p : v.permits) out += "    permit " + permit_line(p) + "\n";
    return out;
}

std::string plural(std::size_t n, const std::string& one, const std::string& many)
{
    return std::to_string(n) + " " + (n == 1 ? one : many);
}

// Q = N once limit >= N - 1 (doc/semaphores.md): a price users must see, not find out when a node fails.
std::string quorum_summary(const semaphore_inspection& seen)
{
    const auto n = seen.nodes.size();
    std::string out = "quorum: a permit needs " + std::to_string(seen.quorum) + " of " + std::to_string(n) +
                      " node(s) (limit " + std::to_string(seen.limit) + ")";
    if (seen.failures_tolerated() > 0)
        return out + ": the semaphore tolerates " + plural(seen.failures_tolerated(), "node failure", "node failures") +
               "\n";
    out += ": the semaphore tolerates no node failure";
    if (n > 1)
        out += " (limit " + std::to_string(seen.limit) + " >= " + std::to_string(n) + " - 1): with one node down, " +
               "no permit is granted and the permits held are lost when their watchdog cannot extend them";
    return out + "\n";
}

}  // namespace

std::string server_column(const std::vector<server_identity>& servers, std::size_t node)
{
    if (node >= servers.size() || !servers[node].known()) return {};
    return "server " + to_string(servers[node]) + "  ";
}

bool may_be_semaphore(const lock_inspection& lock)
{
    bool held = false;
    for (const auto& v : lock.nodes) {
        if (!v.ec && wrong_type(v.message)) return true;
        held = held || v.holder.has_value();
    }
    return !held;
}

bool is_semaphore(const lock_inspection& lock, const semaphore_inspection& seen)
{
    bool sorted_set = true;  // no node said the key is something else again
    for (const auto& v : seen.nodes) {
        if (v.ec) continue;
        if (v.limit || !v.permits.empty()) return true;
        if (wrong_type(v.message)) sorted_set = false;
    }
    const bool lock_wrong_type = std::any_of(lock.nodes.begin(), lock.nodes.end(),
                                             [](const node_lock_view& v) { return !v.ec && wrong_type(v.message); });
    return lock_wrong_type && sorted_set;
}

int print_semaphore_status(const semaphore_inspection& seen, const std::vector<server_identity>& servers,
                           const reporter& report)
{
    const auto n = seen.nodes.size();
    std::string out = "semaphore '" + seen.name + "' on " + std::to_string(n) + " node(s), limit " +
                      std::to_string(seen.limit) + ", quorum " + std::to_string(seen.quorum) + "\n";
    for (std::size_t i = 0; i < n; ++i) out += describe(seen.nodes[i], server_column(servers, i));

    const auto holders = seen.holders();
    std::int64_t held = 0;
    for (const auto& h : holders) held += h.count;
    std::size_t minority = 0;  // permits seen on some node but not on a quorum
    {
        std::vector<std::string> ids;
        for (const auto& v : seen.nodes)
            for (const auto& p : v.permits)
                if (std::find(ids.begin(), ids.end(), p.id) == ids.end()) ids.push_back(p.id);
        minority = ids.size() - holders.size();
    }
    if (holders.empty()) {
        out += "holders: none on a quorum\n";
    } else {
        out += "holders: " + plural(holders.size(), "permit", "permits") + " held on a quorum (" +
               std::to_string(held) + " of " + std::to_string(seen.limit) + " taken)\n";
        for (const auto& h : holders) out += "  " + permit_line(h) + "\n";
    }
    if (minority > 0)
        out += "not on a quorum: " + plural(minority, "permit", "permits") +
               " (being taken, a failed attempt's leftovers, or held on nodes that are down)\n";
    out += quorum_summary(seen);
    write_stdout(out);

    const auto reachable = seen.reachable();
    if (reachable < seen.quorum) {
        report.error("status: only " + std::to_string(reachable) + " of " + std::to_string(n) +
                     " nodes reachable; a permit needs " + std::to_string(seen.quorum));
        return exit_code::unavailable;
    }
    if (reachable < n)
        report.note("status: " + std::to_string(n - reachable) + " of " + std::to_string(n) +
                    " nodes unreachable; the semaphore still works on the quorum left");
    return exit_code::ok;
}

}  // namespace redlock::cli
