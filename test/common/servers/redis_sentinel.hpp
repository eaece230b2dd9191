// A real Sentinel deployment for integration and fault tests: a master with replicas and Sentinels that monitor it,
// on free loopback ports, started in parallel. The Sentinels are told of each other and of the replicas in their
// configuration files (`known-sentinel`, `known-replica`), so they need not wait for their first hello messages (2 s)
// or INFO rounds (10 s): the group is ready once every process answers, the replicas acknowledge the master's writes
// and every Sentinel reports the master ok with all its replicas and peers. With REDLOCK_TEST_SERVER=valkey
// (test_server()), every process is valkey-server (the Sentinels in its --sentinel mode), talked to with valkey-cli.
#pragma once

#include <redlock/node_config.hpp>

#include <chrono>
#include <common/servers/redis_node.hpp>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <sys/types.h>
#include <vector>

namespace redlock::test {

struct sentinel_group_options {
    std::size_t replicas = 2;
    std::size_t sentinels = 3;
    std::size_t quorum = 2;
    /// How long a silent master takes to be judged down (a failover takes about that plus 1.5 s here).
    std::chrono::milliseconds down_after{1000};
    std::chrono::milliseconds failover_timeout{3000};
    std::string master_name = "mymaster";
};

/// One redis-sentinel process with its own directory and configuration file (which it rewrites). Killed when the
/// thread that started it exits (PR_SET_PDEATHSIG), stopped by pid in the destructor.
class sentinel_process {
public:
    /// Starts `redis-sentinel` on `port` with `config` (lines of sentinel.conf; port, bind, dir and logfile are
    /// added). Call wait_ready() before using it.
    sentinel_process(std::uint16_t port, const std::vector<std::string>& config);
    ~sentinel_process();
    sentinel_process(const sentinel_process&) = delete;
    sentinel_process& operator=(const sentinel_process&) = delete;

    /// Waits until it answers PING (at most 5 s); throws with the log tail.
    void wait_ready();
    std::uint16_t port() const { return port_; }
    std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
    /// One command through redis-cli (valkey-cli for Valkey); its trimmed stdout (as redis_node::cli).
    std::string cli(std::vector<std::string> args) const;
    void pause();    // SIGSTOP
    void resume();   // SIGCONT
    void kill();     // SIGKILL and reap
    void restart();  // kill() if running, start again (with the configuration it rewrote), wait_ready()
    bool running() const;
    std::string log_tail(std::size_t lines = 20) const;

private:
    void launch();
    std::string dir_;
    std::uint16_t port_;
    pid_t pid_ = -1;
};

/// A master, `replicas` replicas of it and `sentinels` Sentinels monitoring it under `master_name` with `quorum`.
class sentinel_group {
public:
    /// Starts everything in parallel; throws with the logs if the group is not ready within 15 s.
    explicit sentinel_group(sentinel_group_options options = {});
    ~sentinel_group();
    sentinel_group(const sentinel_group&) = delete;
    sentinel_group& operator=(const sentinel_group&) = delete;

    const std::string& master_name() const { return options_.master_name; }
    /// `redis+sentinel://127.0.0.1:S0/NAME?seed=127.0.0.1:S1&...`: every Sentinel.
    std::string url() const;
    /// A URL naming Sentinel i only.
    std::string url_of(std::size_t sentinel) const;

    /// The data nodes (the first started as the master, the others as its replicas) and the Sentinels.
    std::size_t data_nodes() const { return data_.size(); }
    redis_node& data(std::size_t i) { return *data_.at(i); }
    std::size_t sentinels() const { return sentinels_.size(); }
    sentinel_process& sentinel(std::size_t i) { return *sentinels_.at(i); }

    /// The data node the live Sentinels name (the first that answers) and that says ROLE master.
    redis_node& master();
    /// The live replicas of the master now.
    std::vector<redis_node*> replicas();
    /// The port that Sentinel i names for the master (0 if it names none).
    std::uint16_t named_by(std::size_t sentinel) const;

    /// SIGKILL of the master; returns once every live Sentinel names another data node and it says ROLE master (the
    /// time that took: failover_time()), then waits for the group to settle (settle_time()). The killed node stays
    /// down.
    redis_node& kill_master();
    /// What kill_master() does after the kill, for a test that kills the master itself (at `killed_at`), perhaps on
    /// another thread than this call.
    void await_failover(std::uint16_t old_port, std::chrono::steady_clock::time_point killed_at);
    /// SENTINEL FAILOVER (no agreement needed) through the first live Sentinel; returns once every live Sentinel names
    /// the new master and it says ROLE master, then makes the old master its replica (as the Sentinels would, 8 s
    /// later) and waits for the group to settle.
    void failover();
    /// How long the last kill_master(), await_failover() or failover() took until every Sentinel named the new master.
    std::chrono::milliseconds failover_time() const { return failover_time_; }
    /// How long it took until the group was ready (wait_ready()) with the master it kept: it stayed so, with that
    /// master, past the moment a Sentinel may still take the new master for down by mistake and fail over again
    /// (settle(): seen after kills, it left the master without a replica for some 10 s).
    std::chrono::milliseconds settle_time() const { return settle_time_; }
    /// Starts a data node that kill_master() stopped again, empty, as a replica of the master now; waits until ready.
    void restore(redis_node& node);

    /// Waits until the group is ready: every live Sentinel names the master (ROLE master), reports it ok with every
    /// live replica and Sentinel and has no failover of it under way, and the live replicas acknowledge its writes
    /// (WAIT); throws after `limit`.
    void wait_ready(std::chrono::milliseconds limit = std::chrono::seconds(15));

    /// The last lines of every process's log, for a test's message when something took long.
    std::string log_tails(std::size_t lines = 10) const;

private:
    [[noreturn]] void fail(const std::string& what) const;
    redis_node* node_on_port(std::uint16_t port);
    /// Why the group is not ready (see wait_ready()), or "" with the master's port in `master_port`.
    std::string not_ready(std::uint16_t& master_port);
    /// Waits until every live Sentinel names a data node other than `old_port` that says ROLE master; returns its port.
    std::uint16_t wait_switched(std::uint16_t old_port, std::chrono::steady_clock::time_point since);
    /// After the switch to `master_port`: waits until the group is ready and stays so with one master until the
    /// Sentinels can no longer take it for down by mistake; sets settle_time_ from `since`.
    void settle(std::uint16_t master_port, std::chrono::steady_clock::time_point since);
    void make_replica(redis_node& node, const redis_node& of);

    sentinel_group_options options_;
    std::vector<std::unique_ptr<redis_node>> data_;
    std::vector<std::unique_ptr<sentinel_process>> sentinels_;
    std::chrono::milliseconds failover_time_{0};
    std::chrono::milliseconds settle_time_{0};
};

/// The node configuration the Sentinel suites connect with (`url`: a redis+sentinel:// URL): a connect timeout of 1 s
/// and reconnects 10 to 200 ms apart, so that a node follows a failover within the tests' bounds.
redlock::node_config sentinel_test_config(const std::string& url);

}  // namespace redlock::test
