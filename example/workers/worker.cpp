#include "job_queue.hpp"
#include "worker.hpp"

#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/system/system_error.hpp>

#include <iostream>

namespace workers {

namespace asio = boost::asio;
using namespace std::chrono_literals;

namespace {

asio::awaitable<void> sleep_for(std::chrono::milliseconds d)
{
    asio::steady_timer timer(co_await asio::this_coro::executor, d);
    co_await timer.async_wait(asio::use_awaitable);
}

// The job's effect, once: the account's balance one higher and the job marked done. The read-modify-write runs
// under the account's lock with its fencing token, and the claim moves the account's guard to that token before
// the read: a worker that stalled past its lease, while another took the lock and wrote, has its write refused
// (stale_token: the job goes back to the queue) rather than losing the other's update (doc/fencing.md). The mark
// makes a job that runs again (its first run died after writing) change nothing.
asio::awaitable<bool> write_effect(services s, std::string job, std::string account)
{
    const std::string balance = "balance:" + account;
    const std::string guard = balance + ":fence";
    bool first = false;
    auto section = [&](const redlock::lease& held) -> asio::awaitable<void> {
        redlock::fenced_write claim(guard, held.fencing_token());
        claim.command("EXISTS", balance);  // a fenced write needs a command: this one changes nothing
        redlock::request read = claim.to_request();
        read.push("SISMEMBER", "jobs:done", job);
        read.push("GET", balance);
        redlock::response now;
        co_await s.data.async_exec(read, now, asio::use_awaitable);
        if (auto [claim_ec, newer] = redlock::fenced_write::outcome(now[0]); claim_ec)
            throw boost::system::system_error(claim_ec, "the claim of " + balance);
        if (now[1].as_integer() == 1) co_return;
        const auto value = now[2].is_null() ? 0 : now[2].as_integer().value_or(0);
        redlock::fenced_write write(guard, held.fencing_token());
        write.command("SET", balance, {value + 1});
        write.command("SADD", "jobs:done", {job});
        co_await redlock::async_fenced_write(s.data, write, asio::use_awaitable);  // throws if superseded
        first = true;
    };
    redlock::mutex account_lock(s.locks, "account:" + account, {.ttl = 5s, .wait = 30s, .fencing = true});
    co_await redlock::with_lock(account_lock, section);
    co_return first;
}

// The jobs running across every process, for the progress lines (and a check that the semaphore holds): each
// registers until its permit's validity ends, so a job whose process died counts until its permit could be taken.
// The store keeps the most it ever saw in `jobs:most_running`.
asio::awaitable<void> show_running(services s, const std::string& job, const redlock::permit& permit)
{
    static const redlock::script register_job(R"lua(
redis.call('ZADD', KEYS[1], ARGV[1], ARGV[3])
local now = redis.call('ZCOUNT', KEYS[1], '(' .. ARGV[2], '+inf')
if now > tonumber(redis.call('GET', KEYS[2]) or '0') then redis.call('SET', KEYS[2], now) end
return now
)lua");
    using wall = std::chrono::system_clock;
    const auto now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(wall::now().time_since_epoch());
    redlock::request add;
    add.push_script(register_job, {"jobs:running", "jobs:most_running"},
                    {std::to_string((now_ms + permit.validity()).count()), std::to_string(now_ms.count()), job});
    redlock::response reply;
    co_await s.data.async_exec(add, reply, asio::use_awaitable);
}

asio::awaitable<void> count_api_call(services s)
{
    redlock::request incr;
    incr.push("INCR", "jobs:api_calls");  // across every process: the rate the API sees
    redlock::response reply;
    co_await s.data.async_exec(incr, reply, asio::use_awaitable);
}

asio::awaitable<void> hide_running(services s, const std::string& job)
{
    redlock::request remove;
    remove.push("ZREM", "jobs:running", job);
    redlock::response reply;
    co_await s.data.async_exec(remove, reply, asio::use_awaitable);
}

asio::awaitable<void> run_job(services s, const settings& config, tally& t, std::string job)
{
    // "job-17:account-2"
    const auto account = job.substr(job.find(':') + 1);
    redlock::semaphore slots(s.locks, "workers:jobs", config.limit,
                             {.ttl = 10s, .wait = redlock::lock_options::wait_forever});
    redlock::rate_limiter api(s.data, "workers:external-api",
                              {.rate = config.rate, .period = 1s, .wait = redlock::rate_limit::wait_forever});
    auto body = [&](const redlock::permit& permit) -> asio::awaitable<void> {
        ++t.running;
        struct leaving {  // a job that fails (its exception goes on to the caller) stops running here too
            int& running;
            ~leaving() { --running; }
        } counted{t.running};
        co_await show_running(s, job, permit);
        co_await api.async_acquire(1, asio::use_awaitable);  // paced across every process
        ++t.api_calls;
        co_await count_api_call(s);
        co_await sleep_for(config.api_latency);  // the slow external API
        const bool first = co_await write_effect(s, job, account);
        ++(first ? t.done : t.repeated);
        co_await hide_running(s, job);
    };
    co_await redlock::with_permit(slots, body);  // at most `limit` jobs at once, across every process
}

}  // namespace

asio::awaitable<void> work(services s, const settings& config, tally& t)
{
    // A connection of its own: a blocking take holds up its connection's pipeline while it waits.
    redlock::connection queue_connection(co_await asio::this_coro::executor, config.store);
    co_await queue_connection.async_connect(asio::use_awaitable);
    job_queue queue(queue_connection, config.process);
    for (;;) {
        auto job = co_await queue.take(1s);
        if (!job) {
            if (co_await drained(s.data)) break;
            continue;
        }
        bool failed = false;
        try {
            co_await run_job(s, config, t, *job);
        } catch (const std::exception& e) {
            std::cerr << config.process << ": " << *job << " failed (" << e.what() << "); back in the queue\n";
            failed = true;
        }
        if (failed)
            co_await queue.give_back(*job);
        else
            co_await queue.done(*job);  // only now: a crash before this leaves the job for recovery
    }
    queue_connection.close();
}

}  // namespace workers
