// An election's observer: registered with the client's release wake-ups on the election's release and elected
// channels, it reads who leads whenever a node's message says something changed there, and when the leader's key
// would expire on enough nodes that no quorum holds it (a deadline from the TTLs it read).
#include "primitives/common/client_impl.hpp"
#include "primitives/election/leader_decision.hpp"
#include "primitives/election/leader_read.hpp"

#include <redlock/detail/access.hpp>
#include <redlock/election.hpp>
#include <redlock/key_layout.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/system_executor.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>

namespace redlock {
namespace detail {

namespace asio = boost::asio;
using clock = std::chrono::steady_clock;
using ms = std::chrono::milliseconds;

class observer_state {
public:
    /// How long the first call waits for its subscriptions to be confirmed before it reads anyway.
    static constexpr ms settle_timeout{250};
    /// With subscriptions on too few nodes, or after a read that found no quorum: the longest pause between reads.
    static constexpr ms fallback{1000};
    /// Past the quorum-th TTL: the key has expired by the node's clock too (PTTL is rounded to the millisecond).
    static constexpr ms expiry_margin{2};

    observer_state(std::shared_ptr<client_impl> c, std::string n, lock_options o)
        : client(std::move(c)),
          name(std::move(n)),
          options(o),
          channels{release_channel(name), elected_channel(name)},
          watcher(client->strand())
    {}

    const std::shared_ptr<client_impl> client;
    const std::string name;
    const lock_options options;
    const std::vector<std::string> channels;
    release_observer watcher;  // on the client's strand, as everything below
    bool observing = false;    // registered with the wake-ups
    bool closed = false;       // the handle is gone
    bool busy = false;         // an async_next runs
    bool need_read = true;     // the first call, a deadline passed, or a read that did not complete
    int failed_reads = 0;
    clock::time_point recheck_at = clock::time_point::max();
    observed_leaders seen;

    /// On the strand: the handle is gone. Stops listening, and ends a call still running (operation_aborted).
    void close()
    {
        closed = true;
        if (observing) client->wakeups().unobserve(channels, watcher);
        observing = false;
        watcher.timer.cancel();
    }
};

namespace {

bool cancelled(asio::cancellation_state state)
{
    return state.cancelled() != asio::cancellation_type::none;
}

// The pause after the n-th read in a row that found no quorum: 100 ms, doubling, at most observer_state::fallback.
ms retry_pause(int failed)
{
    return std::min(observer_state::fallback, ms(100) * (1 << std::min(failed - 1, 4)));
}

using next_result = std::tuple<error_code, std::optional<leader_info>>;

next_result aborted()
{
    return {make_error_code(asio::error::operation_aborted), std::nullopt};
}

asio::awaitable<next_result> wait_next(std::shared_ptr<observer_state> self, diagnostics* diag)
{
    auto& wakeups = self->client->wakeups();
    auto& w = self->watcher;
    if (!self->observing) {
        // Subscribed first, then read: a change after the first read is heard (a message wakes the observer, or
        // marks it woken while it reads).
        wakeups.observe(self->channels, w);
        self->observing = true;
        wakeups.subscribe(self->channels);
        const auto settle_until = clock::now() + observer_state::settle_timeout;
        while (!wakeups.reliable(self->channels) && !wakeups.settled(self->channels) && clock::now() < settle_until) {
            w.settling = true;
            w.timer.expires_at(settle_until);
            co_await w.timer.async_wait(asio::as_tuple(asio::use_awaitable));
            w.settling = false;
            if (self->closed || cancelled(co_await asio::this_coro::cancellation_state)) co_return aborted();
        }
    }
    for (;;) {
        if (self->need_read || w.woken) {
            w.woken = false;
            self->need_read = false;
            // The first read (and one after a read without a quorum) waits for nodes still connecting; the others
            // do not wait for a node that is down.
            const bool connect_first = !self->seen.delivered_any || self->failed_reads > 0;
            auto read = co_await read_leader_once(self->client, self->name, diag, connect_first);
            if (read.ec == asio::error::operation_aborted || self->closed) {
                self->need_read = true;  // the next call reads again
                co_return aborted();
            }
            const auto now = clock::now();
            if (read.ec) {
                // A node outage is not a change: read again soon.
                self->recheck_at = now + retry_pause(++self->failed_reads);
                // Until a first state was delivered there is nothing to stay quiet about: the caller learns that no
                // quorum can be read (the read waited for connections: the client's connect timeout) rather than wait
                // in silence. The next call reads again after the pause.
                if (!self->seen.delivered_any) co_return next_result{read.ec, std::nullopt};
            } else {
                self->failed_reads = 0;
                // The leader's key may lapse without a message (its process died); while nobody leads, a missed
                // message (every node that published it reconnecting to us) costs at most one TTL.
                const auto& recheck = read.decision.recheck_in;
                self->recheck_at = std::min(
                    recheck ? read.started + *recheck + observer_state::expiry_margin : clock::time_point::max(),
                    now + self->options.ttl);
                auto& leader = read.decision.leader;
                if (self->seen.is_change(leader)) {
                    self->seen.deliver(leader);
                    co_return next_result{error_code{}, std::move(leader)};
                }
            }
        }
        if (!wakeups.reliable(self->channels)) {
            // Too few nodes confirmed: ask again, and do not rely on their messages meanwhile.
            wakeups.subscribe(self->channels);
            self->recheck_at = std::min(self->recheck_at, clock::now() + observer_state::fallback);
        }
        if (w.woken) continue;  // a message while it read
        w.pausing = true;
        w.timer.expires_at(self->recheck_at);
        co_await w.timer.async_wait(asio::as_tuple(asio::use_awaitable));
        w.pausing = false;
        if (self->closed || cancelled(co_await asio::this_coro::cancellation_state)) co_return aborted();
        if (!w.woken && clock::now() >= self->recheck_at) self->need_read = true;
    }
}

asio::awaitable<next_result> next_leader(std::shared_ptr<observer_state> self, diagnostics* diag)
{
    co_await asio::this_coro::throw_if_cancelled(false);
    if (diag) diag->clear();
    if (self->closed) co_return aborted();
    if (self->busy) {
        if (diag) access::set_client_message(*diag, "another async_next of this observer is running");
        co_return next_result{make_error_code(error::invalid_argument), std::nullopt};
    }
    if (auto why = invalid_election(*self->client, self->name, self->options); !why.empty()) {
        if (diag) access::set_client_message(*diag, why);
        co_return next_result{make_error_code(error::invalid_argument), std::nullopt};
    }
    self->busy = true;
    auto out = co_await wait_next(self, diag);
    self->busy = false;
    co_return out;
}

}  // namespace

std::shared_ptr<observer_state> make_observer(const std::shared_ptr<client_impl>& client, std::string name,
                                              lock_options options)
{
    return std::make_shared<observer_state>(client, std::move(name), options);
}

void start_next_leader(const std::shared_ptr<observer_state>& state, diagnostics* diag, leader_handler handler)
{
    if (!state) {
        return pending_completion<std::optional<leader_info>>(std::move(handler), asio::system_executor())
            .complete(make_error_code(error::invalid_argument), std::nullopt);
    }
    spawn_op<std::optional<leader_info>>(state->client->strand(), state->client->io_executor(),
                                         next_leader(state, diag), std::move(handler));
}

}  // namespace detail

election_observer::~election_observer()
{
    if (impl_) boost::asio::dispatch(impl_->client->strand(), [s = impl_] { s->close(); });
}

election_observer& election_observer::operator=(election_observer&& other) noexcept
{
    if (this != &other) {
        election_observer dropped(std::move(*this));
        impl_ = std::move(other.impl_);
    }
    return *this;
}

election_observer election::observe() const
{
    return election_observer(detail::make_observer(impl_, name_, options_));
}

}  // namespace redlock
