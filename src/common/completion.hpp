// Completing a caller's handler correctly: on its own executor, never inline, with its cancellation slot
// cleared where it is emitted; and running a coroutine on a strand as an operation of any completion token.
#pragma once

#include <redlock/error.hpp>

#include <boost/asio/any_completion_executor.hpp>
#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>
#include <boost/system/system_error.hpp>

#include <memory>
#include <tuple>

namespace redlock::detail {

/// An io_context's executor with outstanding work (`prefer`'s result), and the strands of make_strand_of over an
/// io_context, without and with outstanding work.
using tracked_io_executor = boost::asio::io_context::basic_executor_type<std::allocator<void>, 4>;
using io_strand = boost::asio::strand<boost::asio::io_context::executor_type>;
using tracked_io_strand = boost::asio::strand<tracked_io_executor>;

template <class... Ts>
class pending_completion {
public:
    using handler_type = boost::asio::any_completion_handler<void(error_code, Ts...)>;

    pending_completion() = default;
    /// A handler without an executor of its own completes on `fallback`, the I/O object's executor.
    pending_completion(handler_type handler, const boost::asio::any_io_executor& fallback)
        : slot_(boost::asio::get_associated_cancellation_slot(handler)), handler_(std::move(handler))  // last member
    {
        auto executor = boost::asio::get_associated_executor(handler_, fallback);
        if (!post_directly_to(executor)) {
            io_executor_ = fallback;
            work_ = boost::asio::prefer(executor, boost::asio::execution::outstanding_work.tracked);
        }
    }

    boost::asio::cancellation_slot slot() const noexcept { return slot_; }
    explicit operator bool() const noexcept { return static_cast<bool>(handler_); }

    void complete(error_code ec, Ts... values)
    {
        auto run = [handler = std::move(handler_), slot = slot_, ec, ... values = std::move(values)]() mutable {
            if (slot.is_connected()) slot.clear();  // on the caller's executor, where it emits
            std::move(handler)(ec, std::move(values)...);
        };
        if (direct_) {
            auto direct = std::move(direct_);
            return boost::asio::post(direct, std::move(run));
        }
        // Posted through the I/O executor (so never inline), then run on the handler's executor (a type-erased
        // completion executor cannot be posted to directly).
        auto work = std::move(work_);
        boost::asio::post(io_executor_, boost::asio::bind_executor(work, std::move(run)));
    }

private:
    // A handler whose executor is an io_context's, or a strand of one (every node exec's, see
    // with_concrete_strand; a coroutine's on either), is posted to it: one hop, and its work is tracked in place
    // (prefer on the type-erased completion executor copies it into a shared allocation).
    bool post_directly_to(const boost::asio::any_completion_executor& executor)
    {
        using boost::asio::execution::outstanding_work;
        if (const auto* s = executor.target<io_strand>())
            direct_ = boost::asio::prefer(*s, outstanding_work.tracked);
        else if (const auto* t = executor.target<tracked_io_strand>())
            direct_ = *t;
        else if (const auto* io = executor.target<boost::asio::io_context::executor_type>())
            direct_ = boost::asio::prefer(*io, outstanding_work.tracked);
        else if (const auto* tracked = executor.target<tracked_io_executor>())
            direct_ = *tracked;
        return static_cast<bool>(direct_);
    }

    boost::asio::cancellation_slot slot_;
    boost::asio::any_io_executor direct_;  // with outstanding work, or empty
    boost::asio::any_io_executor io_executor_;
    boost::asio::any_completion_executor work_;
    // Declared last, so destroyed first: a handler dropped without completion (a coroutine's posts its unwinding
    // to its executor) goes while the work above still keeps that executor's context running.
    handler_type handler_;
};

/// The executor that runs a component's handlers one at a time: a strand. Type-erased, so that over an
/// io_context (the common case) it is a strand of the context's own executor type, which fits in
/// any_io_executor's small buffer: copying it (every bound handler, every timer) never allocates.
using strand_type = boost::asio::any_io_executor;

/// A new strand over `ex`.
inline strand_type make_strand_of(const boost::asio::any_io_executor& ex)
{
    if (const auto* io = ex.target<boost::asio::io_context::executor_type>()) return boost::asio::make_strand(*io);
    if (const auto* io = ex.target<tracked_io_executor>()) return boost::asio::make_strand(*io);
    return boost::asio::make_strand(ex);
}

/// Calls `fn` with the strand's own executor when make_strand_of made it over an io_context, else with `strand`. A
/// handler bound to the concrete strand fits any_completion_executor's small buffer, where one bound to the
/// type-erased strand is copied into a shared allocation at every executor query of its type-erased handler (a
/// node's completion: four allocations per request); and pending_completion posts it to its strand in one hop.
template <class Fn>
decltype(auto) with_concrete_strand(const strand_type& strand, Fn&& fn)
{
    if (const auto* s = strand.target<io_strand>()) return fn(*s);
    if (const auto* s = strand.target<tracked_io_strand>()) return fn(*s);
    return fn(strand);
}

/// Runs `op` on `strand` and completes `handler` with the tuple it returns (a handler without an executor of
/// its own on `io_executor`, the strand's underlying executor). The caller's cancellation reaches
/// the coroutine through a signal emitted on the strand (Asio 1.26's co_spawn cancellation is not safe across
/// threads). A stray exception becomes an error code: the handler is always called exactly once.
template <class... Ts>
void spawn_op(strand_type strand, const boost::asio::any_io_executor& io_executor,
              boost::asio::awaitable<std::tuple<error_code, Ts...>> op,
              boost::asio::any_completion_handler<void(error_code, Ts...)> handler)
{
    auto done = std::make_shared<pending_completion<Ts...>>(std::move(handler), io_executor);
    auto finish = [done](std::exception_ptr ep, std::tuple<error_code, Ts...> result) {
        if (ep) {
            try {
                std::rethrow_exception(ep);
            } catch (const boost::system::system_error& e) {
                std::get<0>(result) = e.code();
            } catch (...) {
                std::get<0>(result) = boost::asio::error::fault;
            }
        }
        std::apply([&](error_code ec, Ts&... values) { done->complete(ec, std::move(values)...); }, result);
    };
    auto slot = done->slot();
    if (!slot.is_connected()) return boost::asio::co_spawn(strand, std::move(op), std::move(finish));
    auto signal = std::make_shared<boost::asio::cancellation_signal>();
    slot.assign([signal, strand](boost::asio::cancellation_type_t type) {
        boost::asio::dispatch(strand, [signal, type] { signal->emit(type); });
    });
    boost::asio::co_spawn(strand, std::move(op),
                          boost::asio::bind_cancellation_slot(
                              signal->slot(), [finish = std::move(finish), signal](
                                                  std::exception_ptr ep, std::tuple<error_code, Ts...> result) mutable {
                                  finish(ep, std::move(result));
                              }));
}

}  // namespace redlock::detail
