// A scriptable fake redlock::node for unit tests: no Redis, no sockets. Each fake decides the outcome of every
// request by a policy (by the script the request runs, or by call order), records what it received, and
// completes handlers through asio::post to their associated executor, never inline.
//
// Single-threaded use: the io_context that runs the client must run on one thread (the test's).
#pragma once

#include "common/fakes/resp_values.hpp"

#include <redlock/node.hpp>

#include <boost/asio/any_io_executor.hpp>

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace redlock::test {

/// Which Lua script of the mutex a request runs (by the SHA of its EVALSHA).
enum class script_kind {
    acquire,
    acquire_reading_fence,
    acquire_incrementing_fence,
    commit_fence,
    extend,
    release,
    set_acquire,  ///< not a script: the plain-command acquire (SET key token NX PX ttl GET, PTTL key)
    other,        ///< not one of the lock scripts (or no script at all)
};
const char* to_string(script_kind k) noexcept;

/// What a fake node received in one async_exec.
struct exec_record {
    script_kind kind = script_kind::other;
    std::vector<std::string> keys;
    std::vector<std::string> args;  ///< ARGV: args[0] is the token, args[1] the ttl or the release id...
                                    ///< (set_acquire: the SET's key, then its token and ttl)
    std::chrono::milliseconds timeout{0};
    std::string routing_key;
    std::size_t index = 0;    ///< how many requests of the same kind this node received before this one
    bool batched = false;     ///< an extension that came in the watchdog's batch (one request for many leases)
    std::size_t request = 0;  ///< which async_exec of this node carried it (0, 1, ...)
    /// The request ended with `WAIT replicas timeout` (replica acknowledgement): its two numbers. The node answers it
    /// after the request's own replies (fake_node_control::set_acknowledging_replicas).
    std::optional<std::int64_t> wait_replicas;
    std::optional<std::int64_t> wait_timeout;
    std::string payload;  ///< the request's bytes, as a server would read them
};

/// The outcome a policy picks for one request.
struct action {
    enum class what {
        reply,   ///< answer `value` (one per expected reply: an array of them for a pipelined request), with `ec`
        fail,    ///< fail with `ec`
        hold,    ///< never answer until the test delivers (fake_node_control::deliver_held / fail_held) or close
        silent,  ///< do not answer, then fail with error::timeout when the request's deadline passes
        delay,   ///< answer `value` after `after`
        raise,   ///< throw std::runtime_error from async_exec itself
    };
    what kind = what::reply;
    resp::value value;
    error_code ec;
    std::chrono::milliseconds after{0};

    static action reply(resp::value v) { return {what::reply, std::move(v), {}, {}}; }
    static action fail(error_code e) { return {what::fail, {}, e, {}}; }
    static action fail(error e) { return fail(make_error_code(e)); }
    static action hold() { return {what::hold, {}, {}, {}}; }
    static action silent() { return {what::silent, {}, {}, {}}; }
    static action delayed(std::chrono::milliseconds d, resp::value v) { return {what::delay, std::move(v), {}, d}; }
    static action raise() { return {what::raise, {}, {}, {}}; }

    // The usual replies of the lock scripts.
    static action granted() { return reply(integer(1)); }                              ///< acquire, extend, commit: yes
    static action refused(std::int64_t pttl = 1000) { return reply(integer(-pttl)); }  ///< acquire: -PTTL
    static action not_ours() { return reply(integer(0)); }                             ///< extend: 0
    static action released(std::int64_t n = 1) { return reply(integer(n)); }
    static action other_owner() { return reply(integer(-1)); }  ///< release: another token holds it
    // The replies of the plain-command acquire: {SET's answer, PTTL}.
    static action set_granted(std::int64_t ttl = 10000) { return reply(array({resp::value{}, integer(ttl)})); }
    static action set_refused(std::int64_t pttl = 1000) { return reply(array({bulk("another-token"), integer(pttl)})); }
    /// The node will not run SET or PTTL (an ACL user without them): error replies, error::server_error.
    static action set_rejected()
    {
        auto a = reply(array({error_reply("NOPERM this user has no permissions to run the 'set' command"),
                              error_reply("NOPERM this user has no permissions to run the 'pttl' command")}));
        a.ec = make_error_code(error::server_error);
        return a;
    }
};

/// Decides the outcome of one exec.
using exec_policy = std::function<action(const exec_record&)>;

/// The test's handle on one fake node; outlives the node (the client may be gone while it still holds replies).
class fake_node_control {
public:
    virtual ~fake_node_control() = default;

    /// The persistent outcome of every request running `kind` (replaces the previous one). Defaults: every lock
    /// script is granted (acquire 1, fenced acquire {1, "0"}, extend 1, commit 1, release 1).
    virtual void on(script_kind kind, action a) = 0;
    /// Outcomes by call order for `kind`: the i-th request of that kind gets steps[i]; later ones `then`.
    virtual void on_sequence(script_kind kind, std::vector<action> steps, action then) = 0;
    /// A policy that overrides the per-kind outcomes for every request (empty: back to them).
    virtual void set_policy(exec_policy p) = 0;
    /// How async_connect completes: reply (success), fail(ec) or hold.
    virtual void on_connect(action a) = 0;
    /// What node::server() reports. Default Redis 6.2.0: the client acquires by script, as most tests expect;
    /// Redis 7.0 and up, any Valkey (or unknown) let it send SET NX GET.
    virtual void set_server(server_identity s) = 0;
    /// set_server of a Redis of version `v` (70015 for 7.0.15); 0: unknown (not told yet).
    void set_server_version(std::uint32_t v)
    {
        set_server(v == 0 ? server_identity{} : server_identity{server_kind::redis, v});
    }
    /// Runs when a SUBSCRIBE arrives, before it completes, and says how it completes (empty: confirmed). The
    /// default confirms every subscription.
    virtual void on_subscribe(std::function<error_code(const std::vector<std::string>& channels)> f) = 0;
    /// How many replicas a WAIT reports as having acknowledged; nullopt (the default): as many as it asks for.
    virtual void set_acknowledging_replicas(std::optional<std::int64_t> replicas) = 0;
    /// The same for the requests running `kind` only (a fencing commit acknowledged less than its acquire).
    virtual void set_acknowledging_replicas(script_kind kind, std::optional<std::int64_t> replicas) = 0;
    /// Every WAIT answers `reply` instead (an error reply: the request completes with error::server_error, as a
    /// connection completes a request with an error reply in it); nullopt: back to the count.
    virtual void set_wait_reply(std::optional<resp::value> reply) = 0;
    /// From now on a SUBSCRIBE is never answered (a node that hangs): it fails with error::closed when the node
    /// closes.
    virtual void hold_subscriptions() = 0;

    virtual std::vector<exec_record> received() const = 0;
    std::vector<exec_record> received(script_kind kind) const;
    virtual std::size_t connects() const = 0;
    virtual std::vector<std::string> subscribed() const = 0;

    /// Requests held (action::hold) and connects held.
    virtual std::size_t held() const = 0;
    virtual std::size_t held_connects() const = 0;
    /// Completes the oldest held request with `value` (posted); false if none is held.
    virtual bool deliver_held(resp::value value) = 0;
    virtual bool fail_held(error_code ec) = 0;
    /// Completes every held connect with `ec`; how many.
    virtual std::size_t complete_connects(error_code ec = {}) = 0;

    virtual bool closed() const = 0;
    virtual bool destroyed() const = 0;
    /// Sends a pub/sub message to the node's message handler (if any).
    virtual void publish(std::string_view channel, std::string_view payload) = 0;
};

/// N fake nodes: pass `factory` to redlock::client (with N node_configs), then drive `nodes[i]`.
struct fake_cluster {
    node_factory factory;
    std::vector<std::shared_ptr<fake_node_control>> nodes;

    fake_node_control& operator[](std::size_t i) const { return *nodes.at(i); }
    std::size_t size() const noexcept { return nodes.size(); }
    /// N node_configs (distinct ports, so distinct names) for the client.
    std::vector<node_config> configs() const;
};

/// A factory that makes the i-th fake on its i-th call (each client node_config in order). More calls than
/// `n` fail the test (std::logic_error).
fake_cluster fake_nodes(std::size_t n);

}  // namespace redlock::test
