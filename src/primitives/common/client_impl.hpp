// The N nodes of a client, and the quorum fan-out every primitive uses.
#pragma once

#include "common/completion.hpp"

#include <redlock/connection.hpp>
#include "quorum/quorum.hpp"
#include <redlock/diagnostics.hpp>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>

#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <unordered_map>
#include <vector>

namespace redlock::detail {

/// What the quorum layer talks to: something that executes a request. Today one connection; a Redis
/// Cluster (slot map, MOVED/ASK) or a Sentinel-discovered master can take its place without touching the
/// primitives.
class node {
public:
    virtual ~node() = default;
    virtual const node_config& config() const noexcept = 0;
    virtual void exec(const request& req, response& resp, completion handler) = 0;
    virtual void connect(diagnostics& diag, completion handler) = 0;
    virtual void close() = 0;
    /// Server pushes (pub/sub messages) of this node; called on the node's own executor.
    virtual void set_push_handler(std::function<void(const resp::value&)> handler) = 0;
};

/// Turns one node's answer into a vote.
using classify_fn = vote (*)(error_code ec, const response& resp);

/// One request sent to every node. Nodes that answer after the outcome was decided still write here.
struct fan_out_state {
    fan_out_state(strand_type strand, request r, std::size_t nodes, std::size_t quorum)
        : req(std::move(r)), replies(nodes), results(nodes), votes(nodes), tally(nodes, quorum), wake(strand)
    {}
    request req;
    std::vector<response> replies;
    std::vector<std::optional<error_code>> results;  // empty: no answer yet
    std::vector<vote> votes;
    quorum_tally tally;
    boost::asio::steady_timer wake;  // woken at each answer
    bool cancelled = false;          // the caller was cancelled before the outcome was decided
    bool expired = false;            // the caller's deadline passed before the outcome was decided

    /// Per-node report for diagnostics.
    std::vector<node_outcome> outcomes(const std::vector<std::unique_ptr<node>>& nodes) const;
};

class client_impl : public std::enable_shared_from_this<client_impl> {
public:
    client_impl(boost::asio::any_io_executor ex, std::vector<node_config> configs);

    strand_type& strand() noexcept { return strand_; }
    std::size_t size() const noexcept { return nodes_.size(); }
    std::size_t quorum() const noexcept { return majority(nodes_.size()); }
    const std::vector<node_config>& configs() const noexcept { return configs_; }
    const std::vector<std::unique_ptr<node>>& nodes() const noexcept { return nodes_; }

    enum class until { decided, all_answered };
    /// On the strand: sends `req` to every node at once and returns as soon as the outcome is decided
    /// (Q yes, or more than N - Q no/error) — or, with until::all_answered, once every node answered or hit
    /// its deadline — when the calling coroutine is cancelled, or at `deadline`.
    boost::asio::awaitable<std::shared_ptr<fan_out_state>> fan_out(
        request req, classify_fn classify, until wait_for = until::decided,
        std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max());

    /// Sends `req` to every node and forgets it (releases after a failed or cancelled attempt).
    void send_to_all(request req);

    boost::asio::awaitable<std::tuple<error_code>> connect_all(diagnostics* diag);
    void close();

    /// Registers `timer` to be woken (its wait cancelled) by a release published on one of `channels`.
    /// Each release wakes one watcher, the longest waiting, once however many nodes publish it: waking them
    /// all would make one client's waiters split the nodes' votes among themselves. Subscriptions are shared
    /// and counted: the first watcher subscribes, the last one unsubscribes. On the strand; unwatch before
    /// the timer dies.
    void watch(const std::vector<std::string>& channels, boost::asio::steady_timer& timer);
    void unwatch(const std::vector<std::string>& channels, boost::asio::steady_timer& timer);

    /// One attempt at a time per lock per client: the client's own waiters would otherwise split the nodes'
    /// votes among themselves. Waits (on `timer`, FIFO) until the gate of `id` is free and takes it; false
    /// if the caller was cancelled first. On the strand; the holder must leave_gate.
    boost::asio::awaitable<bool> enter_gate(const std::string& id, boost::asio::steady_timer& timer);
    void leave_gate(const std::string& id);

private:
    friend std::shared_ptr<client_impl> make_client_impl(boost::asio::any_io_executor, std::vector<node_config>);
    void on_message(const std::string& channel, const std::string& payload);

    strand_type strand_;
    std::vector<node_config> configs_;
    std::vector<std::unique_ptr<node>> nodes_;
    std::unordered_map<std::string, std::size_t> subscriptions_;                        // channel -> watchers
    std::unordered_map<std::string, std::deque<boost::asio::steady_timer*>> watchers_;  // oldest first
    std::unordered_map<std::string, std::vector<std::string>> recent_releases_;         // per channel, to de-duplicate
    std::unordered_map<std::string, std::deque<boost::asio::steady_timer*>> gates_;     // taken gates, their waiters
};

/// Makes a client's state and routes its nodes' pushes to it.
std::shared_ptr<client_impl> make_client_impl(boost::asio::any_io_executor ex, std::vector<node_config> configs);

}  // namespace redlock::detail
