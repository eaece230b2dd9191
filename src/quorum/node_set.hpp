// The N nodes of a client and the one fan-out loop every operation uses: the same request to all N at once,
// each with its own deadline, decided as soon as the quorum rule says so.
#pragma once

#include "common/completion.hpp"
#include "quorum/replica_acks.hpp"
#include "quorum/tally.hpp"

#include <redlock/diagnostics.hpp>
#include <redlock/node.hpp>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/container/small_vector.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

namespace redlock::detail {

/// The classifier of operations that only need an answer (connect, subscribe, clean-up): yes unless it failed.
vote answered(error_code ec, const response& resp);

/// When a fan-out returns (the slowest nodes still answer into the state): once its outcome is decided; once every node
/// answered; or once decided with a quorum's answers in hand (yes or no; or every node answered), for callers that read
/// something from a quorum even when it refused (a fair waiter's ticket).
enum class until { decided, all_answered, quorum_answered };

/// One operation sent to every node, and what each said. Shared with the nodes' callbacks, so nodes that
/// answer after the outcome was decided still write here.
struct fan_out_state {
    /// Per-node storage inline for up to this many nodes: one allocation per fan-out.
    static constexpr std::size_t inline_nodes = 7;
    template <class T>
    using per_node = boost::container::small_vector<T, inline_nodes>;

    fan_out_state(const strand_type& strand, std::shared_ptr<const request> r, std::size_t nodes, std::size_t quorum);

    std::shared_ptr<const request> req;  // shared: a lease's requests are built once, sent many times
    std::string routing_key;
    per_node<response> replies;
    per_node<diagnostics> diags;                  // per node, for operations that report text (connect)
    per_node<std::optional<error_code>> results;  // empty: no answer yet
    per_node<vote> votes;
    quorum_tally tally;
    boost::asio::steady_timer wake;  // woken at each answer
    replica_acks acks;               // on: the request ends with a WAIT, judged as each node answers
    bool cancelled = false;          // the caller was cancelled before the outcome was decided
    bool expired = false;            // the deadline passed before the outcome was decided

    bool answered(std::size_t i) const noexcept { return results[i].has_value(); }
    /// The nodes whose yes too few replicas acknowledged (error::replica_acks): error votes in the tally.
    std::size_t unacknowledged() const noexcept;
    /// Writes the per-node report into `diag` (`names`: each node's name), in place: a diagnostics reused across
    /// calls keeps its storage.
    void report(diagnostics& diag, const std::vector<std::string>& names) const;
};

class node_set {
public:
    /// Makes one node per configuration with `factory` (make_node when empty).
    node_set(const boost::asio::any_io_executor& ex, std::vector<node_config> configs, const node_factory& factory);
    ~node_set();
    node_set(const node_set&) = delete;
    node_set& operator=(const node_set&) = delete;

    strand_type& strand() noexcept { return strand_; }
    /// The executor the strand runs on: where handlers without an executor of their own complete.
    const boost::asio::any_io_executor& io_executor() const noexcept { return io_executor_; }
    std::size_t size() const noexcept { return nodes_.size(); }
    /// The longest connect timeout among the nodes: bounds an operation that connects first.
    std::chrono::milliseconds longest_connect_timeout() const noexcept
    {
        std::chrono::milliseconds longest{0};
        for (const auto& c : configs_) longest = std::max(longest, c.connect_timeout);
        return longest;
    }
    std::size_t majority() const noexcept { return detail::majority(nodes_.size()); }
    const std::vector<node_config>& configs() const noexcept { return configs_; }
    const std::vector<std::string>& names() const noexcept { return names_; }
    node& at(std::size_t i) noexcept { return *nodes_[i]; }
    /// How many answers of node i were failures (any thread).
    std::uint64_t errors(std::size_t i) const noexcept { return (*errors_)[i].load(std::memory_order_relaxed); }
    /// Every node runs requests whose keys span hash slots (node::cross_slot_requests; asked once).
    bool cross_slot_requests() const noexcept { return cross_slot_requests_; }
    /// True unless a node told a server that lacks `feature` (a server_identity predicate, such as
    /// &server_identity::has_set_nx_get); nodes that have not told yet do not count.
    bool none_known_lacking(bool (server_identity::*feature)() const noexcept) const
    {
        return std::none_of(nodes_.begin(), nodes_.end(), [feature](const auto& n) {
            const auto server = n->server();
            return server.known() && !(server.*feature)();
        });
    }

    /// What one node does in a fan-out: starts its part of the operation and calls `done` once. What it hands the
    /// node by reference must live in `state` (req, routing_key, replies[i], diags[i]): `done` keeps the state alive
    /// until the node answers, while the caller of the fan-out may be gone before (decided, cancelled, expired).
    using node_call = std::function<void(node& n, fan_out_state& state, std::size_t i, node::completion done)>;

    /// On the strand: starts `call` on every node at once and returns when the outcome is decided with
    /// `quorum` yes votes needed (or later, as `wait_for` says), when the calling
    /// coroutine is cancelled (state->cancelled), or at `deadline` (state->expired). A node that fails, or
    /// throws from its call, is an error vote. The state holds no request: for calls that send none (connect);
    /// a call that sends one passes it to start(), which keeps it in the state.
    boost::asio::awaitable<std::shared_ptr<fan_out_state>> fan_out(
        node_call call, classify_fn classify, std::size_t quorum, until wait_for = until::decided,
        std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max());

    /// How long past a request's own deadline (req.timeout()) a fan-out waits for a node that ignores it.
    static constexpr std::chrono::milliseconds backstop_margin{1000};

    /// The common case: `req` to every node, routed by `routing_key`; never waits past req.timeout() plus
    /// backstop_margin.
    /// With `acks` on, `req` ends with its WAIT (acknowledged()): each node's answer is judged by
    /// judge_acknowledgement before its vote is counted, so a yes too few replicas acknowledged is an error vote
    /// (error::replica_acks), and the replies read as the request's own.
    boost::asio::awaitable<std::shared_ptr<fan_out_state>> fan_out(
        std::shared_ptr<const request> req, std::string routing_key, classify_fn classify, std::size_t quorum,
        until wait_for = until::decided,
        std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max(),
        replica_acks acks = {});

    /// The two halves of fan_out, for operations nobody waits for at once. `start` begins the operation on
    /// every node, or on the nodes `only` (the state records each answer as it arrives; on the strand);
    /// `outcome` waits for it. `outcome` is static: the state, not the node set, is what the nodes' callbacks
    /// and the waiting coroutine share.
    std::shared_ptr<fan_out_state> start(std::shared_ptr<const request> req, std::string routing_key, node_call call,
                                         classify_fn classify, std::size_t quorum,
                                         const std::vector<std::size_t>* only = nullptr, replica_acks acks = {});
    static boost::asio::awaitable<std::shared_ptr<fan_out_state>> outcome(
        std::shared_ptr<fan_out_state> state, until wait_for, std::chrono::steady_clock::time_point deadline);

    /// Sends `req` to every node and forgets it (the releases after a failed or cancelled attempt).
    void send_to_all(std::shared_ptr<const request> req, std::string routing_key);
    /// Sends `req` to the nodes `which` only, and forgets it.
    void send_to(const std::vector<std::size_t>& which, std::shared_ptr<const request> req, std::string routing_key);

    void close();

private:
    boost::asio::any_io_executor io_executor_;
    strand_type strand_;
    std::vector<node_config> configs_;
    std::vector<std::string> names_;
    std::vector<std::unique_ptr<node>> nodes_;
    // Shared with the nodes' callbacks, which may complete after the node set is gone.
    std::shared_ptr<std::vector<std::atomic<std::uint64_t>>> errors_;
    bool cross_slot_requests_ = true;
};

/// The fan-out of one node, for an operation on one Redis deployment (redlock::redis: a rate limiter's call): `req`
/// to `n` alone, as fan_out sends it to each of N, and the same state (quorum 1). Returns once `n` answered, when
/// the calling coroutine is cancelled (state->cancelled), or at req.timeout() plus node_set::backstop_margin
/// (state->expired) for a node that ignores its deadline; the node may answer into the state after that.
boost::asio::awaitable<std::shared_ptr<fan_out_state>> fan_out_to_one(node& n, const strand_type& strand,
                                                                      std::shared_ptr<const request> req,
                                                                      std::string routing_key, classify_fn classify);

}  // namespace redlock::detail
