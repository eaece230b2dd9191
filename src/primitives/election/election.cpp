// Leader election: a campaign is the plain lock of the election key with fencing and the watchdog on (the common lock
// call, its lease machinery), followed by a proclaim of the proposal on a quorum; the term is the lease's fencing
// token. doc/algorithms.md, "Leader election", has the protocol.
#include "primitives/common/client_impl.hpp"
#include "primitives/common/lease_state.hpp"
#include "primitives/common/lock_call.hpp"
#include "primitives/common/lock_kind.hpp"
#include "primitives/common/read_nodes.hpp"
#include "primitives/common/retry.hpp"
#include "primitives/common/token.hpp"
#include "primitives/election/election_scripts.hpp"
#include "primitives/election/leader_decision.hpp"
#include "primitives/election/leader_read.hpp"
#include "primitives/election/leadership_state.hpp"

#include <redlock/detail/access.hpp>
#include <redlock/election.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/system_executor.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <random>

namespace redlock {
namespace detail {

namespace asio = boost::asio;
using clock = std::chrono::steady_clock;

std::string invalid_election(const client_impl& client, const std::string& name, const lock_options& o)
{
    if (name.empty()) return "the election's name is empty";
    if (auto why = invalid_arguments(client, {name}, o, {}); !why.empty()) return why;
    if (o.fair) return "an election is not fair (lock_options::fair): candidates wait in no order";
    return {};
}

namespace {

double unit_random()
{
    thread_local std::minstd_rand rng(std::random_device{}());
    return std::uniform_real_distribution<double>(0.0, 1.0)(rng);
}

// Proclaims `value` at the next revision: on a quorum, while the lease holds.
asio::awaitable<error_code> proclaim_on_nodes(std::shared_ptr<leadership_state> self, std::string value,
                                              diagnostics* diag)
{
    const auto& lease = access::impl(self->held);
    if (!lease) co_return make_error_code(error::not_owner);
    if (lease->lost()) {
        if (diag) access::set_client_message(*diag, "the leadership was lost");
        co_return make_error_code(error::lost);
    }
    const auto revision = self->next_revision++;
    auto& nodes = self->client->nodes();
    // The message is unique to this proclaim; observers wake on every node's copy of it.
    auto req = std::make_shared<const request>(election_scripts::proclaim_request(
        self->name, lease->token(), lease->fencing_token(), value, revision,
        lease->token() + ":" + std::to_string(revision), self->options.node_timeout));
    auto result = co_await nodes.fan_out(req, self->name, election_scripts::classify_proclaim, nodes.majority());
    if (!result->cancelled && result->tally.decide() == quorum_tally::decision::impossible) {
        // Failed: the other answers tell a leadership gone (not_owner) from nodes that did not answer (no_quorum).
        const auto deadline = clock::now() + req->timeout() + node_set::backstop_margin;
        result = co_await node_set::outcome(std::move(result), until::all_answered, deadline);
    }
    if (diag) result->report(*diag, nodes.names());
    if (result->cancelled) co_return make_error_code(asio::error::operation_aborted);
    const auto& tally = result->tally;
    if (tally.decide() != quorum_tally::decision::reached) {
        if (diag)
            access::set_client_message(*diag, tally_text(tally, "wrote the value", "do not hold the leader's key"));
        co_return make_error_code(tally.no() > tally.nodes() - tally.quorum() ? error::not_owner : error::no_quorum);
    }
    // Written while the lease held: a quorum saw our token in the key. Had the lease ended meanwhile, another leader
    // may have been elected, and this value is of a past term (stale: readers ignore a hash whose token is not held).
    if (lease->lost() || clock::now() >= lease->valid_until()) {
        if (diag) access::set_client_message(*diag, "the leadership was lost while the value was proclaimed");
        co_return make_error_code(error::lost);
    }
    self->proclaimed(std::move(value), revision);
    co_return error_code{};
}

asio::awaitable<std::tuple<error_code, leadership>> campaign(std::shared_ptr<client_impl> client, std::string name,
                                                             lock_options o, std::string proposal, diagnostics* diag)
{
    // As every lock call: every cancellation type, and no co_await throws on it (a cancelled attempt cleans up).
    co_await asio::this_coro::reset_cancellation_state(asio::enable_total_cancellation());
    co_await asio::this_coro::throw_if_cancelled(false);
    if (diag) diag->clear();
    o.fencing = true;  // the term
    o.watchdog = true;
    if (auto why = invalid_election(*client, name, o); !why.empty()) {
        client->counters().acquire_ended(make_error_code(error::invalid_argument), {}, {}, false);
        if (diag) access::set_client_message(*diag, why);
        co_return std::tuple{make_error_code(error::invalid_argument), leadership{}};
    }
    const auto quorum = client->nodes().majority();
    // Until the wait's deadline: a lock won whose proclaim fails (a slow node past node_timeout: no_quorum; the key
    // taken back meanwhile: not_owner, lost) is released and the campaign goes back to the lock, as async_lock goes on
    // after an attempt without a quorum.
    const auto deadline = o.wait == lock_options::wait_forever ? clock::time_point::max() : clock::now() + o.wait;
    for (;;) {
        lease_spec spec;
        spec.keys = {name};
        spec.token = random_token();
        spec.key_value = spec.token;
        auto call = make_call(client, plain_lock_kind(), std::move(spec), o, quorum, diag);
        const auto checked = call->options;
        auto outcome = co_await run_call(std::move(call), false);
        auto& [ec, state] = outcome;
        if (ec) co_return std::tuple{ec, leadership{}};
        auto self =
            std::make_shared<leadership_state>(client, name, checked, access::make<redlock::lease>(std::move(state)));
        const auto pec = co_await proclaim_on_nodes(self, proposal, diag);
        if (!pec) co_return std::tuple{error_code{}, access::make<leadership>(std::move(self))};
        // Nothing is held afterwards. A cancelled campaign's release goes in the background (its requests still
        // go out at once); any other is awaited, so a retry (ours or the caller's) finds the key free.
        if (pec == asio::error::operation_aborted) co_return std::tuple{pec, leadership{}};
        co_await self->held.async_release(asio::as_tuple(asio::use_awaitable));
        const auto now = clock::now();
        if (now >= deadline) co_return std::tuple{pec, leadership{}};
        const auto left = deadline == clock::time_point::max()
                              ? lock_options::wait_forever
                              : std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now);
        // A pause as between two attempts of the lock, so that a proclaim that keeps failing does not spin.
        asio::steady_timer pause(co_await asio::this_coro::executor,
                                 retry_delay(o.retry_delay, o.retry_jitter, std::nullopt, left, unit_random()));
        co_await pause.async_wait(asio::as_tuple(asio::use_awaitable));
        if ((co_await asio::this_coro::cancellation_state).cancelled() != asio::cancellation_type::none)
            co_return std::tuple{make_error_code(asio::error::operation_aborted), leadership{}};
        if (deadline != clock::time_point::max()) {
            const auto rest = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock::now());
            if (rest.count() <= 0) co_return std::tuple{pec, leadership{}};
            o.wait = rest;
        }
    }
}

asio::awaitable<std::tuple<error_code>> proclaim(std::shared_ptr<leadership_state> self, std::string value,
                                                 diagnostics* diag)
{
    if (diag) diag->clear();
    co_return std::tuple{co_await proclaim_on_nodes(std::move(self), std::move(value), diag)};
}

asio::awaitable<std::tuple<error_code, std::optional<leader_info>>> read_leader(std::shared_ptr<client_impl> client,
                                                                                std::string name, diagnostics* diag)
{
    if (diag) diag->clear();
    if (name.empty() || client->nodes().size() == 0) {
        if (diag) access::set_client_message(*diag, name.empty() ? "the election's name is empty" : "no nodes");
        co_return std::tuple{make_error_code(error::invalid_argument), std::optional<leader_info>{}};
    }
    auto read = co_await read_leader_once(client, name, diag);
    co_return std::tuple{read.ec, std::move(read.decision.leader)};
}

}  // namespace

void start_campaign(const std::shared_ptr<client_impl>& client, std::string name, lock_options options,
                    std::string proposal, diagnostics* diag, campaign_handler handler)
{
    spawn_op<leadership>(client->strand(), client->io_executor(),
                         campaign(client, std::move(name), options, std::move(proposal), diag), std::move(handler));
}

void start_read_leader(const std::shared_ptr<client_impl>& client, std::string name, diagnostics* diag,
                       leader_handler handler)
{
    spawn_op<std::optional<leader_info>>(client->strand(), client->io_executor(),
                                         read_leader(client, std::move(name), diag), std::move(handler));
}

void start_proclaim(const std::shared_ptr<leadership_state>& state, std::string value, diagnostics* diag,
                    leadership_handler handler)
{
    if (!state) {
        return pending_completion<>(std::move(handler), asio::system_executor()).complete(error::not_owner);
    }
    spawn_op<>(state->client->strand(), state->client->io_executor(), proclaim(state, std::move(value), diag),
               std::move(handler));
}

void start_resign(const std::shared_ptr<leadership_state>& state, diagnostics* diag, leadership_handler handler)
{
    if (!state) return pending_completion<>(std::move(handler), asio::system_executor()).complete({});
    if (diag) return state->held.async_release(*diag, std::move(handler));
    state->held.async_release(std::move(handler));
}

}  // namespace detail

leadership::leadership(std::shared_ptr<detail::leadership_state> state) noexcept : impl_(std::move(state)) {}

// The state's lease releases in the background when the state goes (lease::~lease), once no operation holds it.
leadership::~leadership() = default;

leadership& leadership::operator=(leadership&& other) noexcept
{
    if (this != &other) {
        leadership dropped(std::move(*this));
        impl_ = std::move(other.impl_);
    }
    return *this;
}

leadership::executor_type leadership::get_executor() const noexcept
{
    return impl_ ? impl_->held.get_executor() : executor_type();
}

const std::string& leadership::name() const noexcept
{
    static const std::string none;
    return impl_ ? impl_->name : none;
}

std::uint64_t leadership::term() const noexcept
{
    return impl_ ? impl_->held.fencing_token() : 0;
}

const std::string& leadership::token() const noexcept
{
    return lease().token();
}

std::string leadership::value() const
{
    return impl_ ? impl_->value() : std::string();
}

std::uint64_t leadership::revision() const noexcept
{
    return impl_ ? impl_->revision() : 0;
}

std::chrono::steady_clock::time_point leadership::valid_until() const noexcept
{
    return lease().valid_until();
}

std::chrono::milliseconds leadership::validity() const noexcept
{
    return lease().validity();
}

bool leadership::lost() const noexcept
{
    return lease().lost();
}

const redlock::lease& leadership::lease() const noexcept
{
    return lease_handle();
}

redlock::lease& leadership::lease_handle() const noexcept
{
    // An empty lease's operations complete at once and change nothing: one for every empty leadership.
    static redlock::lease none;
    return impl_ ? impl_->held : none;
}

election::election(const client& c, std::string name, lock_options options)
    : impl_(detail::access::impl(c)), name_(std::move(name)), options_(options)
{}

}  // namespace redlock
