// The distributed mutex: Redlock over the client's N nodes (N = 1 is the same code), plain, fair or reentrant, with
// optional fencing; each a lock kind run by the common lock call.
#include "primitives/common/client_impl.hpp"
#include "primitives/common/lock_call.hpp"
#include "primitives/common/lock_kind.hpp"
#include "primitives/common/token.hpp"

#include <redlock/detail/access.hpp>
#include <redlock/mutex.hpp>

#include <boost/asio/this_coro.hpp>

namespace redlock {
namespace detail {
namespace {

namespace asio = boost::asio;

asio::awaitable<std::tuple<error_code, lease>> lock(std::shared_ptr<client_impl> client, std::vector<std::string> keys,
                                                    lock_options o, std::string owner, bool one_attempt,
                                                    diagnostics* diag)
{
    // Total and partial cancellation too: a cancelled attempt cleans up after itself. No co_await may throw on
    // cancellation: the steps after one (an attempt's clean-up, a fair waiter leaving its queue) must run.
    co_await asio::this_coro::reset_cancellation_state(asio::enable_total_cancellation());
    co_await asio::this_coro::throw_if_cancelled(false);
    if (diag) diag->clear();
    if (auto why = invalid_arguments(*client, keys, o, owner); !why.empty()) {
        client->counters().acquire_ended(make_error_code(error::invalid_argument), {}, {}, false);
        if (diag) access::set_client_message(*diag, why);
        co_return std::tuple{make_error_code(error::invalid_argument), lease{}};
    }
    const auto& kind = o.fair ? fair_lock_kind() : owner.empty() ? plain_lock_kind() : reentrant_lock_kind();
    lease_spec spec;
    spec.keys = std::move(keys);
    spec.token = random_token();
    spec.key_value = owner.empty() ? spec.token : std::move(owner);
    const auto quorum = client->nodes().majority();
    auto call = make_call(std::move(client), kind, std::move(spec), o, quorum, diag);
    auto outcome = co_await run_call(std::move(call), one_attempt);
    auto& [ec, state] = outcome;
    co_return std::tuple{ec, state ? access::make<lease>(std::move(state)) : lease{}};
}

}  // namespace

void start_lock(const std::shared_ptr<client_impl>& client, std::vector<std::string> keys, lock_options options,
                std::string owner, bool one_attempt, diagnostics* diag, lock_handler handler)
{
    // Every cancellation type is safe here: a cancelled attempt releases what it may hold.
    spawn_op<lease>(client->strand(), client->io_executor(),
                    lock(client, std::move(keys), options, std::move(owner), one_attempt, diag), std::move(handler));
}

}  // namespace detail

mutex::mutex(const client& c, std::string key, lock_options options)
    : mutex(c, std::vector<std::string>{std::move(key)}, options)
{}

mutex::mutex(const client& c, std::vector<std::string> keys, lock_options options)
    : impl_(detail::access::impl(c)), keys_(std::move(keys)), options_(options)
{}

}  // namespace redlock
