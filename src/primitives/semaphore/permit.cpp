#include "primitives/common/lease_state.hpp"

#include <redlock/permit.hpp>

#include <boost/asio/system_executor.hpp>

namespace redlock::detail {

namespace asio = boost::asio;
using ms = std::chrono::milliseconds;

namespace {
asio::awaitable<std::tuple<error_code, ms>> extend_permit(std::shared_ptr<lease_state> state, diagnostics* diag)
{
    auto [ec] = co_await lease_state::extend(state, diag);
    co_return std::tuple{ec, ec ? ms(0) : state->server_remaining()};
}
}  // namespace

void start_extend_permit(const std::shared_ptr<lease_state>& state, diagnostics* diag, extend_permit_handler handler)
{
    if (!state)
        return pending_completion<ms>(std::move(handler), asio::system_executor()).complete(error::not_owner, ms(0));
    spawn_op<ms>(state->strand(), state->io_executor(), extend_permit(state, diag), std::move(handler));
}

}  // namespace redlock::detail
