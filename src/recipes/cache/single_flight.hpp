// Single flight: one load of a key at a time in this process, shared by every caller that misses the key
// meanwhile. Each caller waits on its own completion, so one caller's cancellation removes that caller only;
// the load is stopped when its last waiter leaves. Everything here runs on the guard's strand.
#pragma once

#include "common/completion.hpp"

#include <redlock/error.hpp>

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/post.hpp>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

namespace redlock::detail {

/// What a load ends with, for every caller that waited for it.
struct load_outcome {
    error_code ec{};
    std::optional<std::string> value{};
    std::string message{};  ///< for the waiters' diagnostics
};

class flight : public std::enable_shared_from_this<flight> {
public:
    using handler_type = boost::asio::any_completion_handler<void(load_outcome)>;

    /// `abandoned` runs when the last waiter leaves before the outcome: the table forgets the flight (a new
    /// caller starts a new load), and the load is stopped through stop_slot().
    flight(strand_type strand, std::function<void(const flight&)> abandoned)
        : strand_(std::move(strand)), abandoned_(std::move(abandoned))
    {}

    /// Where the load listens for the stop (terminal) emitted when its last waiter leaves.
    boost::asio::cancellation_slot stop_slot() { return stop_.slot(); }

    /// Waits for the outcome; completes with operation_aborted, at once, when the caller's own slot is emitted
    /// (any cancellation type: leaving changes nothing for the others). On the strand.
    template <class Token>
    auto async_wait(Token&& token)
    {
        return boost::asio::async_initiate<Token, void(load_outcome)>(
            [self = shared_from_this()](auto handler) { self->add(handler_type(std::move(handler))); }, token);
    }

    /// Hands `outcome` to every waiter. On the strand, once.
    void finish(const load_outcome& outcome)
    {
        done_ = true;
        auto waiters = std::move(waiters_);
        waiters_.clear();
        for (auto& [id, w] : waiters) {
            if (w.slot.is_connected()) w.slot.clear();  // on the strand, where it is emitted
            complete(std::move(w.handler), outcome);
        }
    }

private:
    struct waiter {
        handler_type handler;
        boost::asio::cancellation_slot slot;
    };

    void add(handler_type handler)
    {
        const auto id = next_id_++;
        auto slot = boost::asio::get_associated_cancellation_slot(handler);
        waiters_.emplace(id, waiter{std::move(handler), slot});
        // By id, not by iterator: a slot may be emitted again after its waiter is gone.
        if (slot.is_connected())
            slot.assign([weak = weak_from_this(), id](boost::asio::cancellation_type_t) {
                if (auto self = weak.lock()) self->leave(id);
            });
    }

    void leave(std::uint64_t id)
    {
        auto node = waiters_.extract(id);
        if (node.empty()) return;
        // Inside the slot's own handler: its slot is not cleared here (that would destroy the running handler).
        complete(std::move(node.mapped().handler), {make_error_code(boost::asio::error::operation_aborted), {}, {}});
        if (waiters_.empty() && !done_) {
            done_ = true;
            if (abandoned_) abandoned_(*this);
            stop_.emit(boost::asio::cancellation_type::terminal);  // on the strand: the load's own
        }
    }

    // Posted: never inside the caller's initiation or its cancellation.
    void complete(handler_type handler, load_outcome outcome)
    {
        boost::asio::post(strand_,
                          [h = std::move(handler), o = std::move(outcome)]() mutable { std::move(h)(std::move(o)); });
    }

    strand_type strand_;
    std::function<void(const flight&)> abandoned_;
    boost::asio::cancellation_signal stop_;
    std::map<std::uint64_t, waiter> waiters_;
    std::uint64_t next_id_ = 0;
    bool done_ = false;
};

}  // namespace redlock::detail
