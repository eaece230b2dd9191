// One attempt at a time per lock per client: a client's own waiters would otherwise split the nodes' votes
// among themselves (20 coroutines of one process, each holding a node or two, and nobody a quorum). A fair waiter
// that holds its ticket does not pass it (acquire_loop says why).
#pragma once

#include "common/kept_entries.hpp"

#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>

#include <string>
#include <unordered_map>
#include <vector>

namespace redlock::detail {

/// On the client's strand. Gates are named (a lock's keys); the first to enter takes the gate, the others
/// queue FIFO and each is handed the gate in turn.
class attempt_gates {
public:
    /// Takes the gate `id` if it is free (no waiting, no coroutine); false if it is taken.
    bool try_enter(const std::string& id);
    /// Waits (on `timer`, which must stay alive until this returns) until the gate `id` is free and takes it;
    /// false if the calling coroutine was cancelled first. The holder must call leave.
    boost::asio::awaitable<bool> enter(const std::string& id, boost::asio::steady_timer& timer);
    /// Frees the gate, or hands it to the longest waiting.
    void leave(const std::string& id);
    /// Another coroutine waits for the gate `id`.
    bool contended(const std::string& id) const
    {
        auto it = gates_.find(id);
        return it != gates_.end() && !it->second.waiters.empty();
    }

    /// Gates with an entry, taken or kept free (the tests').
    std::size_t entries() const noexcept { return gates_.size(); }

private:
    struct gate {
        bool taken = false;
        std::vector<boost::asio::steady_timer*> waiters;
    };
    std::unordered_map<std::string, gate> gates_;
    std::size_t taken_ = 0;
};

/// Holds a gate for a scope: leaves it on destruction, whatever path leaves the scope.
class gate_pass {
public:
    gate_pass(attempt_gates& gates, std::string id) : gates_(gates), id_(std::move(id)) {}
    ~gate_pass() { leave(); }
    gate_pass(const gate_pass&) = delete;
    gate_pass& operator=(const gate_pass&) = delete;

    /// Takes the gate if it is free, at once.
    bool try_enter()
    {
        held_ = gates_.try_enter(id_);
        return held_;
    }
    boost::asio::awaitable<bool> enter(boost::asio::steady_timer& timer)
    {
        held_ = co_await gates_.enter(id_, timer);
        co_return held_;
    }
    /// Held, and another coroutine waits for it.
    bool contended() const { return held_ && gates_.contended(id_); }
    /// Ends this pass without leaving: the gate stays taken until someone calls attempt_gates::leave for it.
    void keep_taken() noexcept { held_ = false; }
    void leave()
    {
        if (held_) gates_.leave(id_);
        held_ = false;
    }

private:
    attempt_gates& gates_;
    std::string id_;
    bool held_ = false;
};

}  // namespace redlock::detail
