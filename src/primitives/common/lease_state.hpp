// The shared state of a lease, kept on the client's strand. The client's lease_keeper wakes it when an
// extension is due (watchdog) and at its validity deadline, where it is declared lost. Every primitive's lease
// is one of these, with its own lease_protocol.
#pragma once

#include "common/completion.hpp"
#include "common/waiter_list.hpp"
#include "primitives/common/client_impl.hpp"
#include "primitives/common/lease_keeper.hpp"
#include "primitives/common/lease_protocol.hpp"
#include "primitives/common/watchdog_schedule.hpp"

#include <redlock/diagnostics.hpp>

#include <boost/asio/awaitable.hpp>

#include <atomic>
#include <chrono>
#include <optional>

namespace redlock::detail {

class lease_state : public std::enable_shared_from_this<lease_state> {
public:
    using clock = std::chrono::steady_clock;
    enum class status { held, released, lost };

    /// `protocol` is a constant of the primitive's (it must outlive the lease); `quorum`: the yes votes an
    /// extension or a release needs (the grant's).
    lease_state(std::shared_ptr<client_impl> client, const lease_protocol& protocol,
                std::shared_ptr<const lease_spec> spec, std::size_t quorum, lease_timing timing,
                std::uint64_t fencing_token, clock::time_point granted_at, clock::time_point valid_until);

    const lease_spec& spec() const noexcept { return *spec_; }
    /// The kind of lease this is (a primitive's constant).
    const lease_protocol& protocol() const noexcept { return protocol_; }
    const std::vector<std::string>& keys() const noexcept { return spec_->keys; }
    const std::string& token() const noexcept { return spec_->token; }
    std::uint64_t fencing_token() const noexcept { return fencing_token_; }
    clock::time_point valid_until() const noexcept
    {
        return clock::time_point(clock::duration(valid_until_.load(std::memory_order_relaxed)));
    }
    bool lost() const noexcept { return lost_.load(std::memory_order_relaxed); }
    /// After a successful extension of a protocol that reports it: how long a quorum of nodes keeps the lease
    /// by their own clocks (the quorum-th longest of the granting nodes' answers). On the strand.
    std::chrono::milliseconds server_remaining() const noexcept { return server_remaining_; }
    strand_type& strand() noexcept { return client_->strand(); }
    const boost::asio::any_io_executor& io_executor() const noexcept { return client_->io_executor(); }

    /// Hands the lease to the client's keeper; call once, on the strand, right after construction.
    void start();

    // For the keeper, on the strand.
    /// The scheduled time came: declares the lease lost if its validity ended; true if an extension is due now.
    bool due(clock::time_point now);
    /// How long before its time the next step may run: an extension up to a tenth of its interval (at most
    /// lease_keeper::batch_window), so that leases due close together share a batch; a loss never.
    std::chrono::milliseconds early_by() const;
    /// The keeper took the lease off its schedule.
    void unscheduled() noexcept { keeper_entry_.reset(); }
    /// The protocol's batched extension, if it has one and every node runs requests that span hash slots.
    lease_protocol::batch_extend_fn batch_extend() const noexcept
    {
        return client_->nodes().cross_slot_requests() ? protocol_.extend_batch : nullptr;
    }
    /// The acknowledgement its extensions ask for: leases batch together only when they ask for the same.
    const replica_acks& acks() const noexcept { return timing_.acks; }
    void declare_lost_from_keeper() { declare_lost("the watchdog failed"); }
    /// One due extension, alone or in a batch (one request per node for every lease of `leases`, which share a
    /// protocol); each lease is then scheduled again.
    static boost::asio::awaitable<void> extend_alone(std::shared_ptr<lease_state> self);
    static boost::asio::awaitable<void> extend_batch(std::vector<std::shared_ptr<lease_state>> leases);

    // The operations own the state while they run: the lease may be destroyed meanwhile.
    static boost::asio::awaitable<std::tuple<error_code>> extend(std::shared_ptr<lease_state> self, diagnostics* diag);
    static boost::asio::awaitable<std::tuple<error_code>> release(std::shared_ptr<lease_state> self, diagnostics* diag);
    /// async_wait_lost's waiters (terminal cancellation): watch() in the initiation, then wait_lost on the strand.
    waiter_list<>& loss_waiters() noexcept { return loss_waiters_; }
    void wait_lost(pending_completion<> waiter, std::uint64_t id, diagnostics* diag);
    /// From the lease's destructor: release without anyone waiting.
    void release_in_background();

    /// Client tracking: a key of this lease changed on `node`, or may have (key_watch). Reads that node again; where
    /// the lease is no longer there, reads every node, and declares it lost when so many lost it that no quorum can
    /// hold it (those that do not answer are the next extension's to judge, as is the repair of a minority). On the
    /// strand.
    void on_key_news(std::size_t node);

    /// A conversion that carries the hold over to another lease under the same token (a read-write lock's
    /// downgrade or upgrade) begins: this state stops holding without a release request (its keeper, extensions,
    /// repairs and loss waiters stop), so nothing of it reaches the nodes after the conversion's request. False if
    /// it was not held (released or lost). On the strand.
    bool hand_over();
    /// The hold again, as it was, after a conversion that failed and left the keys as they were: a new state with
    /// this one's spec, protocol, quorum, timing, fencing token and validity, started. On the strand.
    std::shared_ptr<lease_state> resumed() const;

private:
    static boost::asio::awaitable<error_code> extend_once(std::shared_ptr<lease_state> self, diagnostics* diag);
    // What an extension that started at `start` and ended with `result` does to the lease.
    // `late_answers`: nodes may still answer into `result` (a fan-out decided at its quorum; not a batch's share).
    error_code conclude_extension(clock::time_point start, std::shared_ptr<fan_out_state> result, diagnostics* diag,
                                  bool late_answers);
    // This lease's part of a batched extension: element `j` of each node's reply, as its own fan-out.
    std::shared_ptr<fan_out_state> share_of(const fan_out_state& batch, std::size_t j) const;
    watchdog_plan plan() const;
    // Puts the lease on the keeper's schedule for its next step (replacing the one it has).
    void schedule_next();
    void unschedule();
    void declare_lost(std::string why);
    // The nodes whose answer to `extension` says our keys are missing there and nobody else holds them.
    std::vector<std::size_t> nodes_missing_keys(const fan_out_state& extension) const;
    // After a successful extension: takes the keys back on the nodes that lost them.
    static boost::asio::awaitable<void> repair(std::shared_ptr<lease_state> self,
                                               std::shared_ptr<fan_out_state> extension, bool late_answers);
    // Marks the lease released and stops the keeper and the loss waiters; false if it was released already.
    bool stop_holding();
    // No more tracking news for this lease.
    void unwatch_keys();
    // Reads the nodes tracking named until none is left to read (one coroutine per lease at a time).
    static boost::asio::awaitable<void> check_named_nodes(std::shared_ptr<lease_state> self);
    // A node's replies to check_request say the lease is not there: no error reply (LOADING, a reply cut short), and a
    // key missing or holding another value (of a string: another type is an error).
    bool gone_from(const response& replies) const;
    void finish_waiters(error_code ec);
    // The protocol's requests, built on first use (on the strand).
    const std::shared_ptr<const request>& extend_request();
    const std::shared_ptr<const request>& release_request();
    const std::shared_ptr<const request>& check_request();
    // The quorum-th longest time the extending nodes report (protocol_.remaining), or 0.
    std::chrono::milliseconds remaining_on_quorum(const fan_out_state& extension) const;
    void set_valid_until(clock::time_point t) noexcept
    {
        valid_until_.store(t.time_since_epoch().count(), std::memory_order_relaxed);
    }

    std::shared_ptr<client_impl> client_;
    const lease_protocol& protocol_;
    std::shared_ptr<const lease_spec> spec_;  // shared with the lock call that granted it: no copy per grant
    std::size_t quorum_;
    std::shared_ptr<const request> extend_request_;
    std::shared_ptr<const request> release_request_;
    std::shared_ptr<const request> check_request_;
    lease_timing timing_;
    std::uint64_t fencing_token_;
    status status_ = status::held;
    std::string lost_why_;  // for the diagnostics of async_wait_lost and async_release
    std::atomic<clock::rep> valid_until_;
    std::atomic<bool> lost_{false};
    clock::time_point acquired_at_;
    clock::time_point granted_at_;  // start of the attempt whose grant is in force
    std::chrono::milliseconds server_remaining_{0};
    bool last_extension_failed_ = false;
    std::string last_extension_failure_;
    watchdog_step next_step_{watchdog_step::action::lose, {}};
    std::optional<lease_keeper::entry> keeper_entry_;
    waiter_list<> loss_waiters_;
    bool keys_watched_ = false;      // registered with the client's key_watch
    std::vector<bool> named_nodes_;  // per node: tracking named our keys there since they were last read
    bool checking_ = false;          // check_named_nodes runs
};

}  // namespace redlock::detail
