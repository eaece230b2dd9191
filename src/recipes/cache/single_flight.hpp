// Single flight: one load of a key at a time in this process, shared by every caller that misses the key
// meanwhile. Each caller waits on its own completion, so one caller's cancellation removes that caller only;
// the load is stopped when its last waiter leaves. Everything here runs on the guard's strand.
#pragma once

#include "common/completion.hpp"
#include "common/waiter_list.hpp"

#include <redlock/error.hpp>

#include <boost/asio/async_result.hpp>
#include <boost/asio/cancellation_signal.hpp>

#include <functional>
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
    /// `abandoned` runs when the last waiter leaves before the outcome: the table forgets the flight (a new
    /// caller starts a new load), and the load is stopped through stop_slot().
    flight(strand_type strand, std::function<void(const flight&)> abandoned)
        : strand_(strand),
          abandoned_(std::move(abandoned)),
          waiters_(std::move(strand), every_cancellation, [this] { last_waiter_left(); })
    {}

    /// Where the load listens for the stop (terminal) emitted when its last waiter leaves.
    boost::asio::cancellation_slot stop_slot() { return stop_.slot(); }

    /// Waits for the outcome: void(error_code, load_outcome), the code being the outcome's. Completes with
    /// operation_aborted, at once, when the caller's own slot is emitted (any cancellation type: leaving changes
    /// nothing for the others). On the strand.
    template <class Token>
    auto async_wait(Token&& token)
    {
        return boost::asio::async_initiate<Token, void(error_code, load_outcome)>(
            [self = shared_from_this()](auto handler) {
                waiter_list<load_outcome>::completion done(std::move(handler), self->strand_);
                const auto id = self->waiters_.watch(done, self);
                self->waiters_.add(id, std::move(done));
            },
            token);
    }

    /// Hands `outcome` to every waiter. On the strand, once.
    void finish(const load_outcome& outcome)
    {
        done_ = true;
        waiters_.complete_all(outcome.ec, outcome);
    }

private:
    static constexpr auto every_cancellation = boost::asio::cancellation_type::terminal |
                                               boost::asio::cancellation_type::partial |
                                               boost::asio::cancellation_type::total;

    void last_waiter_left()
    {
        if (done_) return;
        done_ = true;
        if (abandoned_) abandoned_(*this);
        stop_.emit(boost::asio::cancellation_type::terminal);  // on the strand: the load's own
    }

    strand_type strand_;
    std::function<void(const flight&)> abandoned_;
    boost::asio::cancellation_signal stop_;
    waiter_list<load_outcome> waiters_;
    bool done_ = false;
};

}  // namespace redlock::detail
