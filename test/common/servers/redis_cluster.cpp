#include "common/key_slot.hpp"

#include <algorithm>
#include <cerrno>
#include <common/processes/subprocess.hpp>
#include <common/servers/redis_cluster.hpp>
#include <common/servers/tls_files.hpp>
#include <map>
#include <netinet/in.h>
#include <optional>
#include <random>
#include <sstream>
#include <stdexcept>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>

namespace redlock::test {

using namespace std::chrono_literals;

namespace {

constexpr std::uint16_t lowest_port = 20000;
constexpr std::uint16_t highest_port = 55000;  // + 10000 for the bus stays below 65535
constexpr auto poll_interval = 20ms;

bool bind_loopback(std::uint16_t port, std::vector<int>& fds)
{
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) throw std::runtime_error("socket() failed");
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    address.sin_port = htons(port);
    if (::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
        ::close(fd);
        return false;
    }
    fds.push_back(fd);
    return true;
}

std::vector<std::string> split(const std::string& text, char by)
{
    std::vector<std::string> out;
    std::string part;
    std::istringstream in(text);
    while (std::getline(in, part, by)) {
        if (!part.empty()) out.push_back(part);
    }
    return out;
}

std::string field(const std::string& info, const std::string& name)
{
    auto at = info.find(name + ":");
    if (at == std::string::npos) return {};
    auto end = info.find_first_of("\r\n", at);
    return info.substr(at + name.size() + 1, end == std::string::npos ? std::string::npos : end - at - name.size() - 1);
}

}  // namespace

std::vector<std::uint16_t> pick_cluster_ports(std::size_t n)
{
    // Random ports, each checked with its bus port; all stay bound until every one is known, so they differ.
    thread_local std::mt19937 random(std::random_device{}());
    std::uniform_int_distribution<int> any(lowest_port, highest_port);
    std::vector<int> fds;
    std::vector<std::uint16_t> ports;
    for (int tries = 0; ports.size() < n && tries < 1000; ++tries) {
        auto port = static_cast<std::uint16_t>(any(random));
        if (std::find(ports.begin(), ports.end(), port) != ports.end()) continue;
        std::vector<int> pair;
        if (bind_loopback(port, pair) && bind_loopback(static_cast<std::uint16_t>(port + 10000), pair)) {
            ports.push_back(port);
        }
        fds.insert(fds.end(), pair.begin(), pair.end());
    }
    for (int fd : fds) ::close(fd);
    if (ports.size() < n) throw std::runtime_error("pick_cluster_ports: no free loopback ports below 55535");
    return ports;
}

struct sharded_cluster::view {
    struct entry {
        std::string id;
        std::uint16_t port = 0;
        bool master = false;
        bool failed = false;
        std::string master_id;
    };
    std::vector<entry> nodes;
    std::vector<std::uint16_t> owner_port = std::vector<std::uint16_t>(detail::cluster_slots, 0);

    const entry* by_port(std::uint16_t port) const
    {
        for (const auto& e : nodes) {
            if (e.port == port) return &e;
        }
        return nullptr;
    }
};

sharded_cluster::sharded_cluster(sharded_cluster_options options) : options_(options)
{
    const auto count = options_.shards * (1 + options_.replicas_per_shard);
    auto ports = pick_cluster_ports(count);
    node_options node_opts;
    node_opts.extra_args = {"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf", "--cluster-node-timeout",
                            std::to_string(options_.node_timeout.count()),
                            // A replica may always take over, however long it was cut off (a test kills at will).
                            "--cluster-replica-validity-factor", "0", "--cluster-allow-replica-migration", "no"};
    node_opts.tls = options_.tls;
    if (options_.tls) {
        // A node is the TLS client of its peers' buses and of its master: it shows a certificate made for that.
        const auto& files = tls_files::get();
        node_opts.extra_args.insert(node_opts.extra_args.end(),
                                    {"--tls-cluster", "yes", "--tls-replication", "yes", "--tls-client-cert-file",
                                     files.client_cert, "--tls-client-key-file", files.client_key});
    }
    for (auto port : ports) {
        nodes_.push_back(std::unique_ptr<redis_node>(new redis_node(node_opts, port, redis_node::deferred_start{})));
    }
    // A port (or its bus port, + 10000) taken meanwhile, by another test's server or an outgoing connection's
    // ephemeral port: that node starts again on other ports (no node knows another's before the create).
    for (auto& n : nodes_) n->wait_ready([]() -> std::uint16_t { return pick_cluster_ports(1).front(); });
    for (std::size_t i = 0; i < nodes_.size(); ++i) ports[i] = nodes_[i]->port();

    const std::string& redis_cli = cli_program();
    std::vector<std::string> create = {redis_cli, "--cluster", "create"};
    for (auto port : ports) create.push_back("127.0.0.1:" + std::to_string(port));
    create.insert(create.end(), {"--cluster-replicas", std::to_string(options_.replicas_per_shard), "--cluster-yes"});
    if (options_.tls) {
        const auto& files = tls_files::get();
        create.insert(create.end(),
                      {"--tls", "--cacert", files.ca_cert, "--cert", files.client_cert, "--key", files.client_key});
    }
    auto result = run_command(create, 30s);
    if (result.exit_code != 0) fail("redis-cli --cluster create failed:\n" + result.out + result.err);
    wait_healthy();

    // Shards named by the order of their slots.
    auto v = read_view(any_live());
    std::vector<std::uint16_t> seen;
    for (std::size_t slot = 0; slot < detail::cluster_slots; ++slot) {
        auto owner = v.owner_port[slot];
        if (std::find(seen.begin(), seen.end(), owner) != seen.end()) continue;
        seen.push_back(owner);
        first_slots_.push_back(static_cast<std::uint16_t>(slot));
    }
}

sharded_cluster::~sharded_cluster() = default;

std::string sharded_cluster::url() const
{
    std::string out = (options_.tls ? "rediss+cluster://127.0.0.1:" : "redis+cluster://127.0.0.1:") +
                      std::to_string(nodes_.front()->port());
    for (std::size_t i = 1; i < nodes_.size(); ++i) {
        out += i == 1 ? "?seed=" : "&seed=";
        out += "127.0.0.1:" + std::to_string(nodes_[i]->port());
    }
    if (options_.tls) out += "&ca_file=" + tls_files::get().ca_cert;
    return out;
}

std::string sharded_cluster::url_of(const redis_node& node)
{
    return "redis+cluster://127.0.0.1:" + std::to_string(node.port());
}

std::string sharded_cluster::key_on_shard(std::size_t shard, const std::string& prefix) const
{
    auto v = read_view(any_live());
    const auto owner = v.owner_port[first_slot(shard)];
    for (int n = 0; n < 100000; ++n) {
        auto key = prefix + std::to_string(n);
        if (v.owner_port[detail::key_slot(key)] == owner) return key;
    }
    fail("no key with prefix '" + prefix + "' on shard " + std::to_string(shard));
}

redis_node& sharded_cluster::master_of_slot(std::uint16_t slot)
{
    auto v = read_view(any_live());
    return *nodes_.at(index_of_port(v.owner_port[slot]));
}

redis_node& sharded_cluster::replica_of(const redis_node& master)
{
    auto v = read_view(any_live());
    const auto* m = v.by_port(master.port());
    if (m == nullptr) fail("no node on port " + std::to_string(master.port()));
    for (const auto& e : v.nodes) {
        if (!e.master && e.master_id == m->id && !e.failed) return *nodes_.at(index_of_port(e.port));
    }
    fail("the master on port " + std::to_string(master.port()) + " has no live replica");
}

std::string sharded_cluster::id_of(const redis_node& node) const
{
    return node.cli({"CLUSTER", "MYID"});
}

std::size_t sharded_cluster::index_of_port(std::uint16_t port) const
{
    for (std::size_t i = 0; i < nodes_.size(); ++i) {
        if (nodes_[i]->port() == port) return i;
    }
    fail("no node on port " + std::to_string(port));
}

void sharded_cluster::failover(std::size_t shard)
{
    auto& master = master_of_shard(shard);
    auto& replica = replica_of(master);
    auto reply = replica.cli({"CLUSTER", "FAILOVER"});
    if (reply != "OK") fail("CLUSTER FAILOVER on port " + std::to_string(replica.port()) + ": " + reply);
    const auto deadline = std::chrono::steady_clock::now() + 15s;
    while (master_of_shard(shard).port() != replica.port()) {
        if (std::chrono::steady_clock::now() > deadline)
            fail("the replica did not take over shard " + std::to_string(shard));
        std::this_thread::sleep_for(poll_interval);
    }
    wait_healthy();
}

void sharded_cluster::kill_master(std::size_t shard)
{
    auto& master = master_of_shard(shard);
    const auto killed = master.port();
    master.kill();
    // Any of the shard's replicas may win the election (with two a shard, not always the first).
    const auto deadline = std::chrono::steady_clock::now() + 20s;
    for (;;) {
        try {
            if (master_of_shard(shard).port() != killed) break;
        } catch (const std::exception&) {
        }
        if (std::chrono::steady_clock::now() > deadline)
            fail("the replica did not take over shard " + std::to_string(shard));
        std::this_thread::sleep_for(poll_interval);
    }
    wait_healthy();
}

void sharded_cluster::migrate_begin(std::uint16_t slot, const redis_node& to)
{
    auto& from = master_of_slot(slot);
    if (from.port() == to.port())
        fail("slot " + std::to_string(slot) + " is already on port " + std::to_string(to.port()));
    const auto slot_text = std::to_string(slot);
    auto imported = to.cli({"CLUSTER", "SETSLOT", slot_text, "IMPORTING", id_of(from)});
    auto migrating = from.cli({"CLUSTER", "SETSLOT", slot_text, "MIGRATING", id_of(to)});
    if (imported != "OK" || migrating != "OK")
        fail("CLUSTER SETSLOT IMPORTING/MIGRATING: " + imported + " / " + migrating);
    migrating_from_.emplace_back(slot, from.port());
}

void sharded_cluster::migrate_move_keys(std::uint16_t slot, const redis_node& to)
{
    auto at = std::find_if(migrating_from_.begin(), migrating_from_.end(), [&](auto& m) { return m.first == slot; });
    if (at == migrating_from_.end()) fail("migrate_move_keys before migrate_begin");
    auto& from = *nodes_.at(index_of_port(at->second));
    for (;;) {
        auto keys = split(from.cli({"CLUSTER", "GETKEYSINSLOT", std::to_string(slot), "100"}), '\n');
        if (keys.empty()) return;
        std::vector<std::string> migrate = {"MIGRATE", "127.0.0.1", std::to_string(to.port()), "", "0", "5000", "KEYS"};
        migrate.insert(migrate.end(), keys.begin(), keys.end());
        auto reply = from.cli(migrate);
        if (reply != "OK" && reply != "NOKEY") fail("MIGRATE: " + reply);
    }
}

void sharded_cluster::migrate_end(std::uint16_t slot, const redis_node& to)
{
    auto at = std::find_if(migrating_from_.begin(), migrating_from_.end(), [&](auto& m) { return m.first == slot; });
    if (at == migrating_from_.end()) fail("migrate_end before migrate_begin");
    auto& from = *nodes_.at(index_of_port(at->second));
    migrating_from_.erase(at);
    const auto to_id = id_of(to);
    const auto slot_text = std::to_string(slot);
    // The new owner first, then the old one (which then redirects with MOVED), then everyone else.
    to.cli({"CLUSTER", "SETSLOT", slot_text, "NODE", to_id});
    from.cli({"CLUSTER", "SETSLOT", slot_text, "NODE", to_id});
    for (auto& n : nodes_) {
        if (!n->running() || n.get() == &to || n.get() == &from) continue;
        auto role = n->cli({"ROLE"});
        if (role.starts_with("master")) n->cli({"CLUSTER", "SETSLOT", slot_text, "NODE", to_id});
    }
    wait_healthy();
}

void sharded_cluster::migrate_slot(std::uint16_t slot, const redis_node& to)
{
    migrate_begin(slot, to);
    migrate_move_keys(slot, to);
    migrate_end(slot, to);
}

sharded_cluster::view sharded_cluster::read_view(const redis_node& from) const
{
    view v;
    for (const auto& line : split(from.cli({"CLUSTER", "NODES"}), '\n')) {
        auto parts = split(line, ' ');
        if (parts.size() < 8) continue;
        view::entry e;
        e.id = parts[0];
        auto address = parts[1].substr(0, parts[1].find('@'));
        e.port = static_cast<std::uint16_t>(std::stoi(address.substr(address.rfind(':') + 1)));
        auto flags = split(parts[2], ',');
        e.master = std::find(flags.begin(), flags.end(), "master") != flags.end();
        e.failed = std::find(flags.begin(), flags.end(), "fail") != flags.end() ||
                   std::find(flags.begin(), flags.end(), "fail?") != flags.end();
        e.master_id = parts[3];
        v.nodes.push_back(e);
        if (!e.master) continue;
        for (std::size_t i = 8; i < parts.size(); ++i) {
            const auto& range = parts[i];
            if (range.starts_with('[')) continue;  // a migration in progress: the slot is still its owner's
            auto dash = range.find('-');
            auto first = std::stoi(range.substr(0, dash));
            auto last = dash == std::string::npos ? first : std::stoi(range.substr(dash + 1));
            for (int slot = first; slot <= last; ++slot) v.owner_port[static_cast<std::size_t>(slot)] = e.port;
        }
    }
    return v;
}

const redis_node& sharded_cluster::any_live() const
{
    for (const auto& n : nodes_) {
        if (n->running()) return *n;
    }
    fail("no node of the cluster is running");
}

void sharded_cluster::wait_healthy(std::chrono::milliseconds limit)
{
    const auto deadline = std::chrono::steady_clock::now() + limit;
    std::string why;
    for (;;) {
        try {
            why.clear();
            std::optional<std::vector<std::uint16_t>> agreed;
            for (const auto& n : nodes_) {
                if (!n->running()) continue;
                auto info = n->cli({"CLUSTER", "INFO"});
                if (field(info, "cluster_state") != "ok") {
                    why = "port " + std::to_string(n->port()) + " says cluster_state:" + field(info, "cluster_state");
                    break;
                }
                auto v = read_view(*n);
                if (std::count(v.owner_port.begin(), v.owner_port.end(), 0) != 0) {
                    why = "port " + std::to_string(n->port()) + " sees uncovered slots";
                    break;
                }
                if (agreed && *agreed != v.owner_port) {
                    why = "port " + std::to_string(n->port()) + " disagrees on slot owners";
                    break;
                }
                agreed = v.owner_port;
                auto replication = n->cli({"INFO", "replication"});
                if (field(replication, "role") == "slave") {
                    // A replica of a killed master never links again; only a live master's replica must be up.
                    const auto* self = v.by_port(n->port());
                    bool master_alive = false;
                    for (const auto& e : v.nodes) {
                        if (self != nullptr && e.id == self->master_id) master_alive = !e.failed;
                    }
                    if (master_alive && field(replication, "master_link_status") != "up") {
                        why = "replica on port " + std::to_string(n->port()) + " has no link to its master yet";
                        break;
                    }
                }
            }
            if (why.empty()) return;
        } catch (const std::exception& e) {
            why = e.what();
        }
        if (std::chrono::steady_clock::now() > deadline) fail("the cluster is not healthy: " + why);
        std::this_thread::sleep_for(poll_interval);
    }
}

void sharded_cluster::fail(const std::string& what) const
{
    std::string logs;
    for (const auto& n : nodes_) {
        logs += "\n--- port " + std::to_string(n->port()) + (n->running() ? "" : " (down)") + ":\n" + n->log_tail(8);
    }
    throw std::runtime_error("sharded_cluster: " + what + logs);
}

}  // namespace redlock::test
