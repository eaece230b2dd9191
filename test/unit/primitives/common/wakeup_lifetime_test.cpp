// A client dropped while its strand runs a wake-up callback (issue 22, defect 5). The release wake-ups' linger
// sweep and their subscription confirmations run on the client's strand holding only a weak_ptr to the wake-ups;
// the last reference to the client may go on another thread at that very moment. Whatever they touch must live
// as long as they run: run under the asan and tsan presets, a use-after-free or a data race is the failure.
//
// Each trial: a client of three nodes (node 0 confirms subscriptions at once, node 1 confirms late, node 2 refuses
// late, which the client logs), a lock on 16 keys (16 release channels, so a sweep is long) refused by every node,
// a waiter that subscribes and gives up after a few ms, so its channels linger; then the test's thread, which does
// not run the io_context, drops the mutex and the client at a jittered moment around the sweep or around the late
// answers, while two threads run the io_context.
#include "common/fakes/resp_values.hpp"
#include "primitives/common/client_impl.hpp"

#include <redlock/client.hpp>
#include <redlock/detail/access.hpp>
#include <redlock/mutex.hpp>

#include <boost/asio/append.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace {

namespace asio = boost::asio;
using namespace redlock;
using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;
using ms = std::chrono::milliseconds;
using us = std::chrono::microseconds;

constexpr ms short_linger{10};  // the wake-ups' linger in these trials (2 s in a real client)
constexpr ms wait_for{5};       // how long a waiter waits before it gives up
constexpr us jitter{1500};      // the drop lands within +- this of its target
constexpr std::size_t keys_per_lock = 16;
constexpr std::size_t trials_per_round = 4;
#ifdef REDLOCK_TEST_SANITIZED
constexpr std::size_t rounds = 150;
#else
constexpr std::size_t rounds = 250;
#endif

// One trial's client: how its nodes behave and what they saw. Shared with the nodes, the log handler and the
// test, so it outlives whichever of them goes last.
struct trial_state {
    clock_type::time_point answer_at;  // when nodes 1 and 2 answer their subscriptions
    std::atomic<bool> dropped{false};  // the test is dropping the client's last references
    std::atomic<int> unsubscribes{0};
    std::atomic<int> unsubscribes_after_drop{0};
    std::atomic<int> logs{0};
    std::atomic<int> logs_after_drop{0};
};

void complete(const asio::any_io_executor& ex, node::completion h, error_code ec)
{
    asio::post(ex, asio::append(std::move(h), ec));  // on the handler's own executor (the client's strand)
}

// Thread-safe: it keeps no state of its own but the trial's atomics; it completes through its executor, and a
// late answer is a timer that holds the handler, not the node.
class stress_node final : public node {
public:
    stress_node(asio::any_io_executor ex, std::size_t index, std::shared_ptr<trial_state> s)
        : ex_(std::move(ex)), index_(index), s_(std::move(s))
    {}

    std::string name() const override { return "redis://fake:" + std::to_string(7000 + index_); }
    void async_connect(diagnostics&, completion handler) override { complete(ex_, std::move(handler), {}); }
    void async_exec(const request& req, response& resp, std::string_view, completion handler) override
    {
        resp.clear();
        for (std::size_t i = 0; i < req.expected_replies(); ++i)
            resp.push_back(test::integer(-60'000));  // refused: another owner holds it for a minute
        complete(ex_, std::move(handler), {});
    }
    void async_subscribe(std::vector<std::string>, diagnostics&, completion handler) override
    {
        if (index_ == 0) return complete(ex_, std::move(handler), {});
        const auto ec = index_ == 1 ? error_code{} : make_error_code(error::server_error);  // node 2 refuses
        auto timer = std::make_shared<asio::steady_timer>(ex_, s_->answer_at);
        timer->async_wait(
            [timer, ex = ex_, ec, h = std::move(handler)](error_code) mutable { complete(ex, std::move(h), ec); });
    }
    void async_unsubscribe(std::vector<std::string>, completion handler) override
    {
        ++s_->unsubscribes;
        if (s_->dropped) ++s_->unsubscribes_after_drop;
        complete(ex_, std::move(handler), {});
    }
    void set_message_handler(message_handler) override {}  // no messages in these trials
    redlock::server_identity server() const override { return {redlock::server_kind::redis, 60200}; }  // script
    void close() override {}

private:
    asio::any_io_executor ex_;
    std::size_t index_;
    std::shared_ptr<trial_state> s_;
};

// A client of three stress nodes whose wake-ups linger `short_linger` (the internal seam: client_impl's constructor).
client make_client(const asio::any_io_executor& ex, const std::shared_ptr<trial_state>& s)
{
    std::vector<node_config> configs(3);
    for (std::size_t i = 0; i < configs.size(); ++i) {
        configs[i].host = "fake";
        configs[i].port = static_cast<std::uint16_t>(7000 + i);
    }
    auto next = std::make_shared<std::size_t>(0);
    node_factory factory = [s, next](const asio::any_io_executor& e, const node_config&) -> std::unique_ptr<node> {
        return std::make_unique<stress_node>(e, (*next)++, s);
    };
    // client's constructor takes no linger: an empty client is given a state made with one.
    client c(ex, {});
    detail::access::impl(c) = std::make_shared<detail::client_impl>(ex, std::move(configs), factory, short_linger);
    c.set_log_handler([s](log_level, std::string_view) {
        ++s->logs;
        if (s->dropped) ++s->logs_after_drop;
    });
    return c;
}

struct lock_done {
    std::atomic<bool> done{false};
    clock_type::time_point at;  // written before `done`
};

struct trial {
    std::shared_ptr<trial_state> s = std::make_shared<trial_state>();
    std::shared_ptr<lock_done> finished = std::make_shared<lock_done>();
    std::optional<client> c;
    std::optional<redlock::mutex> m;
    clock_type::time_point drop_at;
    std::weak_ptr<detail::client_impl> impl;
};

// Runs `rounds` rounds of trials_per_round clients, each dropped by this thread (which does not run the
// io_context) around the sweep or around the late subscription answers, and checks the trials reached the callback.
void run_trials(bool around_sweep)
{
    asio::io_context ctx;
    auto work = asio::make_work_guard(ctx);
    std::vector<std::thread> threads;
    for (int i = 0; i < 2; ++i) threads.emplace_back([&ctx] { ctx.run(); });

    std::minstd_rand rng(std::random_device{}());
    std::uniform_int_distribution<us::rep> spread(-jitter.count(), jitter.count());
    std::vector<std::shared_ptr<trial_state>> states;
    std::size_t dropped_here = 0, unfinished = 0;
    const auto started = clock_type::now();

    std::vector<std::string> keys;
    for (std::size_t k = 0; k < keys_per_lock; ++k) keys.push_back("{stress}:" + std::to_string(k));
    lock_options o;
    o.wait = wait_for;

    for (std::size_t round = 0; round < rounds; ++round) {
        std::vector<trial> trials(trials_per_round);
        const auto now = clock_type::now();
        for (auto& t : trials) {
            // Around the sweep: the late answers come after it (subscriptions still unconfirmed when it runs).
            // Around the answers: after the waiter gave up, before the sweep.
            t.s->answer_at = now + wait_for + (around_sweep ? 3 * short_linger : short_linger / 2);
            states.push_back(t.s);
            t.c.emplace(make_client(ctx.get_executor(), t.s));
            t.impl = detail::access::impl(*t.c);
            t.m.emplace(*t.c, keys, o);
            t.m->async_lock(asio::bind_executor(ctx.get_executor(), [f = t.finished](error_code, lease) {
                f->at = clock_type::now();
                f->done.store(true, std::memory_order_release);
            }));
        }
        const auto give_up = clock_type::now() + 5s;
        for (auto& t : trials) {
            while (!t.finished->done.load(std::memory_order_acquire) && clock_type::now() < give_up)
                std::this_thread::sleep_for(100us);
            if (!t.finished->done.load(std::memory_order_acquire)) {
                ++unfinished;
                t.drop_at = clock_type::now();
                continue;
            }
            // The acquire left its channels when it finished: the sweep runs `short_linger` after.
            const auto target = around_sweep ? t.finished->at + short_linger : t.s->answer_at;
            t.drop_at = std::max(t.finished->at, target + us(spread(rng)));
        }
        std::sort(trials.begin(), trials.end(), [](const trial& a, const trial& b) { return a.drop_at < b.drop_at; });
        for (auto& t : trials) {
            std::this_thread::sleep_until(t.drop_at);
            t.s->dropped = true;
            t.m.reset();
            t.c.reset();  // the last reference, unless the acquire's frame or a callback still holds one
            if (t.impl.expired()) ++dropped_here;
        }
    }
    work.reset();
    for (auto& th : threads) th.join();

    int unsubscribes = 0, late_unsubscribes = 0, logs = 0, late_logs = 0;
    for (const auto& s : states) {
        unsubscribes += s->unsubscribes;
        late_unsubscribes += s->unsubscribes_after_drop;
        logs += s->logs;
        late_logs += s->logs_after_drop;
    }
    const auto took = std::chrono::duration_cast<ms>(clock_type::now() - started);
    BOOST_TEST_MESSAGE(states.size() << " clients in " << took.count() << " ms; " << dropped_here
                                     << " died on the test's thread; sweeps unsubscribed " << unsubscribes << " times ("
                                     << late_unsubscribes << " after the drop began); " << logs << " refusals logged ("
                                     << late_logs << " after the drop began)");
    BOOST_TEST(unfinished == 0u);
    BOOST_TEST(dropped_here > 0u);
    // The trials reach the callback (otherwise they prove nothing).
    if (around_sweep)
        BOOST_TEST(unsubscribes > 0);
    else
        BOOST_TEST(logs > 0);
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_client_dropped_on_another_thread_while_its_strand_sweeps_lingering_channels)
{
    run_trials(true);
}

BOOST_AUTO_TEST_CASE(a_client_dropped_on_another_thread_while_its_strand_hears_late_subscription_answers)
{
    run_trials(false);
}
