#include <algorithm>
#include <cerrno>
#include <common/processes/subprocess.hpp>
#include <common/servers/raw_client.hpp>
#include <common/servers/redis_sentinel.hpp>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <optional>
#include <random>
#include <sstream>
#include <stdexcept>
#include <sys/wait.h>
#include <thread>

namespace redlock::test {

using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;

namespace {

constexpr auto poll_interval = 20ms;

std::string trim(const std::string& s)
{
    auto first = s.find_first_not_of(" \t\r\n");
    if (first == std::string::npos) return {};
    auto last = s.find_last_not_of(" \t\r\n");
    return s.substr(first, last - first + 1);
}

std::vector<std::string> lines_of(const std::string& text)
{
    std::vector<std::string> out;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) out.push_back(trim(line));
    return out;
}

// The value of `name=` in a line of INFO's comma-separated fields ("name=mymaster,status=ok,...").
std::string info_field(const std::string& line, const std::string& name)
{
    const auto key = name + "=";
    for (std::size_t at = 0; at < line.size();) {
        auto end = line.find(',', at);
        if (end == std::string::npos) end = line.size();
        auto part = line.substr(at, end - at);
        if (part.starts_with(key)) return part.substr(key.size());
        at = end + 1;
    }
    return {};
}

// The rest of the INFO line that starts with `name` ("master_link_status:"), or "".
std::string info_line(const std::string& info, const std::string& name)
{
    for (const auto& line : lines_of(info))
        if (line.starts_with(name)) return line.substr(name.size());
    return {};
}

// Whether `replicas` replicas acknowledge a write of one connection to the master on `port`: a SET, then a WAIT on the
// same connection (a WAIT from another, say another redis-cli, covers that connection's writes only: none).
bool acknowledged(std::uint16_t port, std::size_t replicas)
{
    const auto n = std::to_string(replicas);
    raw_client client(port, 500ms);
    client.write("*3\r\n$3\r\nSET\r\n$20\r\nsentinel_group:probe\r\n$1\r\n1\r\n*3\r\n$4\r\nWAIT\r\n$" +
                     std::to_string(n.size()) + "\r\n" + n + "\r\n$3\r\n200\r\n",
                 500ms);
    boost::system::error_code ec;
    const auto ok = client.read_until("\r\n", 1000ms, ec);
    const auto count = client.read_until("\r\n", 1000ms, ec);
    return !ec && ok == "+OK\r\n" && count == ":" + n + "\r\n";
}

// 40 hex digits: a Sentinel's run id (`sentinel myid`).
std::string random_id()
{
    thread_local std::mt19937_64 random(std::random_device{}());
    static constexpr char hex[] = "0123456789abcdef";
    std::string id;
    for (int i = 0; i < 40; ++i) id += hex[random() % 16];
    return id;
}

std::string read_all(const std::string& path)
{
    std::ifstream in(path, std::ios::binary);
    std::ostringstream out;
    out << in.rdbuf();
    return out.str();
}

std::string last_lines(const std::string& text, std::size_t n)
{
    auto all = lines_of(text);
    std::string out;
    for (std::size_t i = all.size() > n ? all.size() - n : 0; i < all.size(); ++i) out += all[i] + "\n";
    return out;
}

}  // namespace

// --- one Sentinel -----------------------------------------------------------------------------------------------

namespace {

// What an error calls the Sentinel process.
std::string sentinel_name()
{
    return test_server() == server_kind::valkey ? "valkey-server --sentinel" : "redis-sentinel";
}

}  // namespace

sentinel_process::sentinel_process(std::uint16_t port, const std::vector<std::string>& config) : port_(port)
{
    dir_ = make_temp_dir("redlock-sentinel-");
    std::ofstream out(dir_ + "/sentinel.conf");
    out << "port " << port_ << "\nbind 127.0.0.1\ndaemonize no\ndir " << dir_ << "\nlogfile " << dir_
        << "/sentinel.log\n";
    for (const auto& line : config) out << line << "\n";
    out.close();
    if (!out) throw std::runtime_error("cannot write " + dir_ + "/sentinel.conf");
    launch();
}

sentinel_process::~sentinel_process()
{
    stop_process(pid_, 2s);
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
}

void sentinel_process::launch()
{
    // redis-sentinel is redis-server in Sentinel mode; without the package, the server binary's --sentinel does it.
    // Valkey: valkey-server's --sentinel, always (the valkey-sentinel package, which only wraps it, is not needed).
    std::vector<std::string> args;
    if (test_server() == server_kind::valkey) {
        args = {server_program(), dir_ + "/sentinel.conf", "--sentinel"};
    } else {
        try {
            args = {find_executable("redis-sentinel", "REDLOCK_REDIS_SENTINEL"), dir_ + "/sentinel.conf"};
        } catch (const std::exception&) {
            args = {server_program(), dir_ + "/sentinel.conf", "--sentinel"};
        }
    }
    pid_ = spawn_process({std::move(args), environment_with({}), dir_ + "/stdio.log"});
}

void sentinel_process::wait_ready()
{
    const auto deadline = steady::now() + 5s;
    for (;;) {
        int status = 0;
        if (wait_for_exit(pid_, 0ms, &status)) {
            pid_ = -1;
            throw std::runtime_error(sentinel_name() + " on port " + std::to_string(port_) + " exited (status " +
                                     std::to_string(exit_status(status)) + "):\n" + log_tail());
        }
        try {
            raw_client client(port_, 200ms);
            if (client.command("*1\r\n$4\r\nPING\r\n", 500ms) == "+PONG\r\n") return;
        } catch (const std::exception&) {
        }
        if (steady::now() >= deadline)
            throw std::runtime_error(sentinel_name() + " on port " + std::to_string(port_) + " did not answer:\n" +
                                     log_tail());
        std::this_thread::sleep_for(5ms);
    }
}

std::string sentinel_process::cli(std::vector<std::string> args) const
{
    std::vector<std::string> command = {cli_program(), "-h", "127.0.0.1", "-p", std::to_string(port_)};
    command.insert(command.end(), std::make_move_iterator(args.begin()), std::make_move_iterator(args.end()));
    auto result = run_command(command, 5s);
    if (result.exit_code != 0)
        throw std::runtime_error(std::filesystem::path(cli_program()).filename().string() + " on sentinel port " +
                                 std::to_string(port_) + " failed: " + trim(result.err + result.out));
    return trim(result.out);
}

void sentinel_process::pause()
{
    if (pid_ > 0) ::kill(pid_, SIGSTOP);
}

void sentinel_process::resume()
{
    if (pid_ > 0) ::kill(pid_, SIGCONT);
}

void sentinel_process::kill()
{
    if (pid_ <= 0) return;
    ::kill(pid_, SIGKILL);
    while (::waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
    }
    pid_ = -1;
}

void sentinel_process::restart()
{
    kill();
    launch();
    wait_ready();
}

bool sentinel_process::running() const
{
    if (pid_ <= 0) return false;
    siginfo_t info{};
    if (::waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOHANG | WNOWAIT) != 0) return false;
    return info.si_pid == 0;
}

std::string sentinel_process::log_tail(std::size_t lines) const
{
    auto tail = last_lines(read_all(dir_ + "/sentinel.log"), lines);
    auto stdio = trim(read_all(dir_ + "/stdio.log"));
    if (!stdio.empty()) tail += "[stdout/stderr]\n" + last_lines(stdio, lines);
    return tail;
}

// --- the group --------------------------------------------------------------------------------------------------

sentinel_group::sentinel_group(sentinel_group_options options) : options_(std::move(options))
{
    const auto data_count = 1 + options_.replicas;
    auto ports = pick_free_ports(data_count + options_.sentinels);
    const auto master_port = std::to_string(ports[0]);
    for (std::size_t i = 0; i < data_count; ++i) {
        node_options o;
        // A full sync starts at once rather than after the diskless sync's default 5 s delay.
        o.extra_args = {"--repl-diskless-sync-delay", "0"};
        if (i > 0) o.extra_args.insert(o.extra_args.end(), {"--replicaof", "127.0.0.1", master_port});
        data_.push_back(std::unique_ptr<redis_node>(new redis_node(o, ports[i], redis_node::deferred_start{})));
    }
    std::vector<std::string> ids;
    for (std::size_t i = 0; i < options_.sentinels; ++i) ids.push_back(random_id());
    const auto& name = options_.master_name;
    for (std::size_t i = 0; i < options_.sentinels; ++i) {
        std::vector<std::string> config = {
            "sentinel myid " + ids[i],
            "sentinel monitor " + name + " 127.0.0.1 " + master_port + " " + std::to_string(options_.quorum),
            "sentinel down-after-milliseconds " + name + " " + std::to_string(options_.down_after.count()),
            "sentinel failover-timeout " + name + " " + std::to_string(options_.failover_timeout.count()),
            "sentinel parallel-syncs " + name + " " + std::to_string(std::max<std::size_t>(options_.replicas, 1)),
        };
        for (std::size_t r = 1; r < data_count; ++r)
            config.push_back("sentinel known-replica " + name + " 127.0.0.1 " + std::to_string(ports[r]));
        for (std::size_t s = 0; s < options_.sentinels; ++s) {
            if (s == i) continue;
            config.push_back("sentinel known-sentinel " + name + " 127.0.0.1 " + std::to_string(ports[data_count + s]) +
                             " " + ids[s]);
        }
        sentinels_.push_back(std::make_unique<sentinel_process>(ports[data_count + i], config));
    }
    for (auto& n : data_) n->wait_ready(nullptr);  // the Sentinels are configured with these ports
    for (auto& s : sentinels_) s->wait_ready();
    wait_ready();
}

sentinel_group::~sentinel_group()
{
    sentinels_.clear();  // first: no Sentinel acts on the data nodes going away
    data_.clear();
}

std::string sentinel_group::url() const
{
    std::string out = url_of(0);
    for (std::size_t i = 1; i < sentinels_.size(); ++i)
        out += (i == 1 ? "?seed=" : "&seed=") + sentinels_[i]->address();
    return out;
}

std::string sentinel_group::url_of(std::size_t sentinel) const
{
    return "redis+sentinel://" + sentinels_.at(sentinel)->address() + "/" + options_.master_name;
}

std::uint16_t sentinel_group::named_by(std::size_t sentinel) const
{
    const auto reply = lines_of(sentinels_.at(sentinel)->cli({"SENTINEL", "GET-MASTER-ADDR-BY-NAME", master_name()}));
    if (reply.size() != 2) return 0;
    try {
        return static_cast<std::uint16_t>(std::stoi(reply[1]));
    } catch (const std::exception&) {
        return 0;
    }
}

redis_node* sentinel_group::node_on_port(std::uint16_t port)
{
    for (auto& n : data_)
        if (n->port() == port) return n.get();
    return nullptr;
}

redis_node& sentinel_group::master()
{
    for (std::size_t i = 0; i < sentinels_.size(); ++i) {
        if (!sentinels_[i]->running()) continue;
        auto* node = node_on_port(named_by(i));
        if (node && node->running() && node->cli({"ROLE"}).starts_with("master")) return *node;
    }
    fail("no Sentinel names a data node that is master");
}

std::vector<redis_node*> sentinel_group::replicas()
{
    auto& m = master();
    std::vector<redis_node*> out;
    for (auto& n : data_)
        if (n.get() != &m && n->running()) out.push_back(n.get());
    return out;
}

std::string sentinel_group::not_ready(std::uint16_t& master_port)
{
    try {
        auto& m = master();
        const auto live_replicas = replicas();
        std::size_t live_sentinels = 0;
        for (auto& s : sentinels_) live_sentinels += s->running() ? 1 : 0;
        for (auto& r : live_replicas) {
            if (info_line(r->cli({"INFO", "replication"}), "master_link_status:") != "up")
                return "replica on port " + std::to_string(r->port()) + " has no link to the master yet";
        }
        if (!live_replicas.empty() && !acknowledged(m.port(), live_replicas.size()))
            return "the replicas do not acknowledge the master's writes yet";
        for (auto& s : sentinels_) {
            if (!s->running()) continue;
            const auto line = info_line(s->cli({"INFO", "sentinel"}), "master0:");
            const auto who = "sentinel on port " + std::to_string(s->port());
            std::size_t good_replicas = 0;
            const auto replicas = lines_of(s->cli({"SENTINEL", "REPLICAS", master_name()}));
            for (std::size_t l = 0; l + 1 < replicas.size(); ++l)
                if (replicas[l] == "flags" && replicas[l + 1] == "slave") ++good_replicas;
            if (info_field(line, "address") != "127.0.0.1:" + std::to_string(m.port()))
                return who + " names " + info_field(line, "address");
            if (info_field(line, "status") != "ok") return who + " says the master is " + info_field(line, "status");
            if (std::stoul("0" + info_field(line, "sentinels")) < live_sentinels)
                return who + " knows " + info_field(line, "sentinels") + " sentinels";
            if (good_replicas < live_replicas.size())
                return who + " sees " + std::to_string(good_replicas) + " healthy replicas";
            // Only "master": not "failover_in_progress" (a failover under way, which goes on when the master answers
            // again and promotes a replica later) nor "disconnected" (its links to the master are not up yet).
            const auto master = lines_of(s->cli({"SENTINEL", "MASTER", master_name()}));
            const auto flags = std::find(master.begin(), master.end(), "flags");
            const auto flags_value = flags != master.end() && flags + 1 != master.end() ? *(flags + 1) : "";
            if (flags_value != "master") return who + " flags the master " + flags_value;
        }
        master_port = m.port();
        return {};
    } catch (const std::exception& e) {
        return e.what();
    }
}

void sentinel_group::wait_ready(std::chrono::milliseconds limit)
{
    const auto deadline = steady::now() + limit;
    for (;;) {
        std::uint16_t port = 0;
        const auto why = not_ready(port);
        if (why.empty()) return;
        if (steady::now() > deadline) fail("the Sentinel group is not ready: " + why);
        std::this_thread::sleep_for(poll_interval);
    }
}

std::uint16_t sentinel_group::wait_switched(std::uint16_t old_port, steady::time_point since)
{
    const auto deadline = steady::now() + 30s;
    for (;;) {
        bool switched = true;
        std::uint16_t named = 0;
        for (std::size_t i = 0; switched && i < sentinels_.size(); ++i) {
            if (!sentinels_[i]->running()) continue;
            const auto port = named_by(i);
            if (port == 0 || port == old_port || (named != 0 && port != named)) switched = false;
            named = port;
        }
        if (switched) {
            auto* node = node_on_port(named);
            try {
                if (node && node->running() && node->cli({"ROLE"}).starts_with("master")) {
                    failover_time_ = std::chrono::duration_cast<std::chrono::milliseconds>(steady::now() - since);
                    return named;
                }
            } catch (const std::exception&) {
            }
        }
        if (steady::now() > deadline)
            fail("the Sentinels did not switch from the master on port " + std::to_string(old_port));
        std::this_thread::sleep_for(poll_interval);
    }
}

// A Sentinel that switches to the new master drops its links to the old one and opens new ones at its next
// reconnect, at most once a second counted from its last attempt (at the dead master), but counts the new master
// unanswered from the switch on (sentinelResetPrimary, sentinelReconnectInstance in valkey-server 8.0's sentinel.c;
// Redis 7.0's are the same). When that reconnect comes too late for a PONG within down-after (1 s here), it takes
// the new master for down; the other Sentinels' master-down votes of the first failover, which a switch keeps, make
// that objective at once, and it fails over again (epoch 2): the other replica is promoted, and the first promoted
// one stays a master without replicas until the Sentinels convert it, some 10 s later (+convert-to-slave): no
// grant with replica acks in between. Seen in about 1 kill in 6 with valkey-server under load; the group looked
// ready for a moment while that second failover was under way. So the group has settled once it is ready and stays
// so, with one master, until a Sentinel can no longer misjudge it: its links are up (wait_ready() wants them up),
// and down-after with some margin for the PONG has passed since the switch.
void sentinel_group::settle(std::uint16_t master_port, steady::time_point since)
{
    const auto quiet = std::min<std::chrono::milliseconds>(options_.down_after, 1s) + 700ms;
    const auto deadline = steady::now() + 40s;
    auto quiet_until = steady::now() + quiet;  // every live Sentinel named the master before now
    std::optional<steady::time_point> ready_since;
    for (;;) {
        std::uint16_t port = 0;
        const auto why = not_ready(port);
        const auto now = steady::now();
        if (!why.empty()) {
            ready_since.reset();
        } else {
            if (port != master_port) {  // failed over again: that switch is as risky
                master_port = port;
                quiet_until = now + quiet;
                ready_since.reset();
            }
            if (!ready_since) ready_since = now;
            if (now >= quiet_until) {
                settle_time_ = std::chrono::duration_cast<std::chrono::milliseconds>(*ready_since - since);
                return;
            }
        }
        if (now > deadline) fail("the Sentinel group did not settle: " + (why.empty() ? "it kept failing over" : why));
        std::this_thread::sleep_for(why.empty() ? 5 * poll_interval : poll_interval);
    }
}

redis_node& sentinel_group::kill_master()
{
    auto& m = master();
    const auto started = steady::now();
    m.kill();
    await_failover(m.port(), started);
    return m;
}

void sentinel_group::await_failover(std::uint16_t old_port, steady::time_point killed_at)
{
    settle(wait_switched(old_port, killed_at), killed_at);
}

void sentinel_group::failover()
{
    auto& old = master();
    const auto started = steady::now();
    auto live = std::find_if(sentinels_.begin(), sentinels_.end(), [](const auto& s) { return s->running(); });
    if (live == sentinels_.end()) fail("failover: no Sentinel is running");
    const auto reply = (*live)->cli({"SENTINEL", "FAILOVER", master_name()});
    if (reply != "OK") fail("SENTINEL FAILOVER: " + reply);
    const auto port = wait_switched(old.port(), started);
    make_replica(old, *node_on_port(port));
    settle(port, started);
}

void sentinel_group::make_replica(redis_node& node, const redis_node& of)
{
    const auto reply = node.cli({"REPLICAOF", "127.0.0.1", std::to_string(of.port())});
    if (!reply.starts_with("OK")) fail("REPLICAOF on port " + std::to_string(node.port()) + ": " + reply);
}

void sentinel_group::restore(redis_node& node)
{
    if (node.running()) fail("restore: the node on port " + std::to_string(node.port()) + " is running");
    auto& args = node.options_.extra_args;
    if (auto at = std::find(args.begin(), args.end(), "--replicaof"); at != args.end() && args.end() - at >= 3)
        args.erase(at, at + 3);
    args.insert(args.end(), {"--replicaof", "127.0.0.1", std::to_string(master().port())});
    node.restart();
    wait_ready();
}

std::string sentinel_group::log_tails(std::size_t lines) const
{
    std::string logs;
    for (const auto& n : data_)
        logs += "\n--- data port " + std::to_string(n->port()) + (n->running() ? "" : " (down)") + ":\n" +
                n->log_tail(lines);
    for (const auto& s : sentinels_)
        logs += "\n--- sentinel port " + std::to_string(s->port()) + (s->running() ? "" : " (down)") + ":\n" +
                s->log_tail(lines);
    return logs;
}

void sentinel_group::fail(const std::string& what) const
{
    throw std::runtime_error("sentinel_group: " + what + log_tails(8));
}

redlock::node_config sentinel_test_config(const std::string& url)
{
    auto c = redlock::parse_url(url);
    c.connect_timeout = std::chrono::milliseconds(1000);
    c.reconnect_min_delay = std::chrono::milliseconds(10);
    c.reconnect_max_delay = std::chrono::milliseconds(200);
    return c;
}

}  // namespace redlock::test
