#include "primitives/common/lease_state.hpp"

#include <redlock/lease.hpp>

#include <boost/asio/dispatch.hpp>
#include <boost/asio/system_executor.hpp>

namespace redlock {
namespace detail {

namespace asio = boost::asio;

void start_extend(const std::shared_ptr<lease_state>& state, diagnostics* diag, lease_handler handler)
{
    if (!state) return pending_completion<>(std::move(handler), asio::system_executor()).complete(error::not_owner);
    spawn_op<>(state->strand(), state->io_executor(), lease_state::extend(state, diag), std::move(handler));
}

void start_release(const std::shared_ptr<lease_state>& state, diagnostics* diag, lease_handler handler)
{
    if (!state) return pending_completion<>(std::move(handler), asio::system_executor()).complete({});
    spawn_op<>(state->strand(), state->io_executor(), lease_state::release(state, diag), std::move(handler));
}

void start_wait_lost(const std::shared_ptr<lease_state>& state, diagnostics* diag, lease_handler handler)
{
    if (!state) {
        return pending_completion<>(std::move(handler), asio::system_executor())
            .complete(asio::error::operation_aborted);
    }
    pending_completion<> waiter(std::move(handler), state->io_executor());
    const auto id = state->loss_waiters().watch(waiter, state);
    asio::dispatch(state->strand(),
                   [state, id, diag, w = std::move(waiter)]() mutable { state->wait_lost(std::move(w), id, diag); });
}

}  // namespace detail

lease::lease(std::shared_ptr<detail::lease_state> state) noexcept : impl_(std::move(state)) {}

lease::~lease()
{
    if (impl_) boost::asio::dispatch(impl_->strand(), [s = impl_] { s->release_in_background(); });
}

lease& lease::operator=(lease&& other) noexcept
{
    if (this != &other) {
        lease dropped(std::move(*this));
        impl_ = std::move(other.impl_);
    }
    return *this;
}

lease::executor_type lease::get_executor() const noexcept
{
    return impl_ ? impl_->io_executor() : executor_type();
}

const std::vector<std::string>& lease::keys() const noexcept
{
    static const std::vector<std::string> none;
    return impl_ ? impl_->keys() : none;
}

const std::string& lease::token() const noexcept
{
    static const std::string none;
    return impl_ ? impl_->token() : none;
}

std::uint64_t lease::fencing_token() const noexcept
{
    return impl_ ? impl_->fencing_token() : 0;
}

std::chrono::steady_clock::time_point lease::valid_until() const noexcept
{
    return impl_ ? impl_->valid_until() : std::chrono::steady_clock::time_point{};
}

std::chrono::milliseconds lease::validity() const noexcept
{
    const auto left = valid_until() - std::chrono::steady_clock::now();
    return std::max(std::chrono::milliseconds(0), std::chrono::duration_cast<std::chrono::milliseconds>(left));
}

bool lease::lost() const noexcept
{
    return impl_ && impl_->lost();
}

}  // namespace redlock
