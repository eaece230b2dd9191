#include "primitives/common/acquire_loop.hpp"
#include "primitives/common/retry.hpp"

#include <redlock/detail/access.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <random>

namespace redlock::detail {

namespace asio = boost::asio;
using clock = std::chrono::steady_clock;
using ms = std::chrono::milliseconds;

namespace {

// Subscribes `timer` to the release channels once started, and unsubscribes when destroyed.
class release_watch {
public:
    release_watch(release_wakeups& wakeups, const std::vector<std::string>& channels, asio::steady_timer& timer)
        : wakeups_(wakeups), channels_(channels), timer_(timer)
    {}
    ~release_watch()
    {
        if (started_) wakeups_.unwatch(channels_, timer_);
    }
    release_watch(const release_watch&) = delete;
    release_watch& operator=(const release_watch&) = delete;

    void start()
    {
        if (!started_) wakeups_.watch(channels_, timer_);
        started_ = true;
    }

private:
    release_wakeups& wakeups_;
    const std::vector<std::string>& channels_;
    asio::steady_timer& timer_;
    bool started_ = false;
};

// Jitter needs no CSPRNG (tokens do): one generator per thread, seeded once.
double unit_random()
{
    thread_local std::minstd_rand rng(std::random_device{}());
    return std::uniform_real_distribution<double>(0.0, 1.0)(rng);
}

bool cancelled(asio::cancellation_state state)
{
    return state.cancelled() != asio::cancellation_type::none;
}

}  // namespace

asio::awaitable<std::tuple<error_code, std::shared_ptr<lease_state>>> acquire_loop(std::shared_ptr<client_impl> client,
                                                                                   acquire_plan plan,
                                                                                   attempt_fn attempt,
                                                                                   diagnostics* diag)
{
    asio::steady_timer pause(client->strand());
    release_watch watch(client->wakeups(), plan.channels, pause);
    std::optional<asio::steady_timer> gate_wait;  // only when another attempt of this client holds the gate

    for (std::uint64_t n = 1;; ++n) {
        attempt_result result;
        {
            gate_pass gate(client->gates(), plan.gate_id);
            if (!gate.try_enter()) {
                if (!gate_wait) gate_wait.emplace(client->strand());
                if (!co_await gate.enter(*gate_wait))
                    co_return std::tuple{make_error_code(asio::error::operation_aborted), nullptr};
            }
            result = co_await attempt(n);
        }  // the outcome is known: the client's next waiter may try
        if (!result.failure) co_return std::tuple{error_code{}, std::move(result.granted)};
        if (result.failure == asio::error::operation_aborted) co_return std::tuple{result.failure, nullptr};

        const auto now = clock::now();
        if (now >= plan.wait_until) {
            if (diag && !client->wakeups().refusal().empty() && n > 1)
                access::set_client_message(*diag,
                                           std::string(diag->client_message()) + "; " + client->wakeups().refusal());
            co_return std::tuple{result.failure, nullptr};
        }
        const auto left = plan.wait_until == clock::time_point::max()
                              ? ms::max()
                              : std::chrono::duration_cast<ms>(plan.wait_until - now);
        // Refused: a release will be published; wake up for it rather than wait out the delay.
        if (result.refused) watch.start();
        pause.expires_after(retry_delay(plan.retry_delay, plan.retry_jitter, result.holder_ttl, left, unit_random()));
        co_await pause.async_wait(asio::as_tuple(asio::use_awaitable));
        if (cancelled(co_await asio::this_coro::cancellation_state))
            co_return std::tuple{make_error_code(asio::error::operation_aborted), nullptr};
    }
}

}  // namespace redlock::detail
