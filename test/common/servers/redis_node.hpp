// Real redis-server processes for integration and fault tests, on free loopback ports; or valkey-server ones,
// when REDLOCK_TEST_SERVER=valkey (test_server()).
#pragma once

#include <redlock/server_identity.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <sys/types.h>
#include <vector>

namespace redlock::test {

/// The server the fixtures start, from the environment variable REDLOCK_TEST_SERVER: `redis` (or unset, or
/// empty) starts redis-server and talks to it with redis-cli; `valkey` starts valkey-server, with valkey-cli. Any
/// other value throws. ctest runs the suites labelled `valkey` with REDLOCK_TEST_SERVER=valkey (test/README.md).
/// REDLOCK_REDIS_SERVER and REDLOCK_REDIS_CLI, when set, still name the programs to run, whichever server.
server_kind test_server();
/// The path of the server program (redis-server or valkey-server) and of its command-line client.
const std::string& server_program();
const std::string& cli_program();
/// The server the fixture's nodes report, read from `INFO server` of `node_info` (Valkey: `server_name:valkey`
/// and `valkey_version`; Redis: `redis_version`), independently of HELLO: what a connection's server() must say.
server_identity server_of_info(const std::string& node_info);

struct node_options {
    bool tls = false;          // TLS-only listener (--port 0 --tls-port P) with tls_files, --tls-auth-clients no
    bool unix_socket = false;  // also listen on unix_path()
    bool clock_shim = false;   // run under the clock shim so set_clock() works
    bool persistence = false;  // appendonly yes, appendfsync always: data survives kill() + restart()
    std::string requirepass;
    std::vector<std::string> extra_args;  // appended last, so they override the defaults
};

// One redis-server child process with its own temp dir. Create it from the test's own thread:
// the server is killed when the thread that started it exits (PR_SET_PDEATHSIG).
class redis_node {
public:
    // Starts the server and waits until it answers PING (at most 5 s); throws with the log tail.
    explicit redis_node(node_options options = {});
    ~redis_node();
    redis_node(const redis_node&) = delete;
    redis_node& operator=(const redis_node&) = delete;

    std::uint16_t port() const { return port_; }
    std::string url() const;        // "redis://127.0.0.1:P", or "rediss://127.0.0.1:P" for TLS
    std::string unix_path() const;  // "" unless unix_socket
    const node_options& options() const { return options_; }

    void pause();    // SIGSTOP: connects still succeed, nothing is answered
    void resume();   // SIGCONT
    void kill();     // SIGKILL and reap: connects are refused
    void restart();  // kill() if running, start again on the same port, wait until ready
    bool running() const;

    // Skews the server's wall clock: from now on it reads real + offset, advancing `rate` times as
    // fast as real time. Requires clock_shim; takes effect for the next command sent.
    void set_clock(std::int64_t offset_ms, double rate = 1.0);

    // Runs one command through redis-cli (valkey-cli for Valkey) and returns its trimmed raw stdout (an error reply
    // comes back as its text, e.g. "ERR unknown command ..."). Throws if redis-cli fails (say the node is down) or
    // takes more than 5 s (say the node is paused).
    std::string cli(std::vector<std::string> args) const;
    /// A field of INFO commandstats for `command` ("calls", "rejected_calls"...); 0 when it never ran. Commands
    /// a script runs count too.
    long command_stat(const std::string& command, const std::string& field = "calls") const;

    std::string log_tail(std::size_t lines = 20) const;
    pid_t pid() const { return pid_; }  // -1 when not running
    const std::string& dir() const { return dir_; }

private:
    friend class cluster;
    friend class sharded_cluster;
    friend class sentinel_group;
    struct deferred_start {};
    redis_node(node_options options, std::uint16_t port, deferred_start);

    void launch();
    // A start that fails because the port is taken is tried again: on a port from `another_port` when given
    // (the port chosen before was free a moment ago, not now), else on the same one after a pause (a restart).
    void wait_ready(std::uint16_t (*another_port)());
    bool logged_ready() const;
    bool answers_ping() const;
    void teardown() noexcept;

    node_options options_;
    std::string dir_;
    std::uint16_t port_ = 0;
    pid_t pid_ = -1;
    std::uintmax_t log_offset_ = 0;  // where the current run's log starts
};

// n nodes with the same options, started concurrently.
class cluster {
public:
    explicit cluster(std::size_t n, node_options options = {});

    redis_node& operator[](std::size_t i) { return *nodes_.at(i); }
    const redis_node& operator[](std::size_t i) const { return *nodes_.at(i); }
    std::size_t size() const { return nodes_.size(); }
    std::vector<std::string> urls() const;

private:
    std::vector<std::unique_ptr<redis_node>> nodes_;
};

// A loopback port that was free a moment ago (bind to port 0, read it, close).
std::uint16_t pick_free_port();
// n distinct such ports.
std::vector<std::uint16_t> pick_free_ports(std::size_t n);

}  // namespace redlock::test
