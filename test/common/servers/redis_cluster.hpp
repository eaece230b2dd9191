// A real Redis Cluster for integration and fault tests: sharded (masters that split the 16384 hash slots, each with
// replicas), unlike `cluster` in redis_node.hpp, which is N independent servers. Started on free loopback ports
// below 55535 (the cluster bus listens on port + 10000), created with `redis-cli --cluster create`, and ready once
// every node says cluster_state:ok and they all agree on who owns which slot.
#pragma once

#include <redlock/node_config.hpp>

#include <chrono>
#include <common/servers/redis_node.hpp>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace redlock::test {

/// The node configuration of a Cluster URL for tests: quick reconnects, so a test sees a failover's new master soon.
inline redlock::node_config cluster_config(const std::string& url)
{
    auto c = redlock::parse_url(url);
    c.reconnect_min_delay = std::chrono::milliseconds(10);
    c.reconnect_max_delay = std::chrono::milliseconds(200);
    return c;
}

struct sharded_cluster_options {
    std::size_t shards = 3;
    std::size_t replicas_per_shard = 1;
    /// --cluster-node-timeout: how long a silent master takes to be judged failed (a failover takes about twice).
    std::chrono::milliseconds node_timeout{1000};
    /// Every node TLS-only (tls_files; the bus and replication over TLS too): url() is rediss+cluster:// with the
    /// test CA.
    bool tls = false;
};

class sharded_cluster {
public:
    /// Starts and creates the cluster; throws with the nodes' log tails if it is not healthy within 20 s.
    explicit sharded_cluster(sharded_cluster_options options = {});
    ~sharded_cluster();
    sharded_cluster(const sharded_cluster&) = delete;
    sharded_cluster& operator=(const sharded_cluster&) = delete;

    /// Every node, masters and replicas, in start order (the first `shards` were created as the masters).
    std::size_t size() const { return nodes_.size(); }
    redis_node& node(std::size_t i) { return *nodes_.at(i); }
    std::size_t shards() const { return options_.shards; }

    /// `redis+cluster://127.0.0.1:P` of the first node, every other node a seed (`rediss+cluster://...?ca_file=` with
    /// tls).
    std::string url() const;
    /// A cluster URL naming only `node` (plain TCP).
    static std::string url_of(const redis_node& node);

    /// Shard i: the slots its master held when the cluster was created (0: from slot 0, and so on); it keeps its
    /// name through failovers. `first_slot(i)` is its first slot.
    std::uint16_t first_slot(std::size_t shard) const { return first_slots_.at(shard); }
    /// A key (`<prefix><n>`) whose slot is now served by shard i's master.
    std::string key_on_shard(std::size_t shard, const std::string& prefix = "key:") const;

    /// The master that serves `slot` now, as the cluster says (CLUSTER NODES of a live node).
    redis_node& master_of_slot(std::uint16_t slot);
    redis_node& master_of_shard(std::size_t shard) { return master_of_slot(first_slot(shard)); }
    /// A replica of `master` (its first, as CLUSTER NODES lists them).
    redis_node& replica_of(const redis_node& master);
    /// The node's cluster id (CLUSTER MYID).
    std::string id_of(const redis_node& node) const;
    /// The index in node() of the node listening on `port`.
    std::size_t index_of_port(std::uint16_t port) const;

    /// A coordinated failover: CLUSTER FAILOVER on the shard's replica; returns once it is the master and every
    /// live node agrees (no write is lost).
    void failover(std::size_t shard);
    /// SIGKILL of the shard's master; returns once its replica is promoted, every live node agrees and says
    /// cluster_state:ok. The killed node stays down (node(i).running() is false).
    void kill_master(std::size_t shard);

    /// A live slot migration in its three steps, so a test can act between them: `begin` marks the slot IMPORTING
    /// on `to` and MIGRATING on its owner; `move_keys` MIGRATEs the keys it holds there; `end` gives the slot to
    /// `to` on every node. migrate_slot does the three.
    void migrate_begin(std::uint16_t slot, const redis_node& to);
    void migrate_move_keys(std::uint16_t slot, const redis_node& to);
    void migrate_end(std::uint16_t slot, const redis_node& to);
    void migrate_slot(std::uint16_t slot, const redis_node& to);

    /// Waits until every live node says cluster_state:ok, they agree on each slot's master and each replica's
    /// link to its master is up; throws after `limit`.
    void wait_healthy(std::chrono::milliseconds limit = std::chrono::seconds(20));

private:
    struct view;  // one node's CLUSTER NODES
    view read_view(const redis_node& from) const;
    const redis_node& any_live() const;
    [[noreturn]] void fail(const std::string& what) const;

    sharded_cluster_options options_;
    std::vector<std::unique_ptr<redis_node>> nodes_;
    std::vector<std::uint16_t> first_slots_;
    // Slot being migrated -> the node it was migrating from (migrate_begin to migrate_end).
    std::vector<std::pair<std::uint16_t, std::uint16_t>> migrating_from_;
};

/// Loopback ports free a moment ago with port + 10000 free too, all below 55535.
std::vector<std::uint16_t> pick_cluster_ports(std::size_t n);

}  // namespace redlock::test
