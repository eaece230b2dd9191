#include "job_queue.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace workers {

namespace asio = boost::asio;

namespace {
const std::string processing_prefix = "jobs:processing:";

// Every processing list on the store (SCAN: never one long blocking KEYS on a shared server).
asio::awaitable<std::vector<std::string>> processing_lists(const redlock::redis& store)
{
    std::vector<std::string> lists;
    std::string cursor = "0";
    do {
        redlock::request scan;
        scan.push("SCAN", cursor, "MATCH", processing_prefix + "*", "COUNT", 100);
        redlock::response reply;
        co_await store.async_exec(scan, reply, asio::use_awaitable);
        cursor = reply[0].elements.at(0).text;
        for (const auto& key : reply[0].elements.at(1).elements) lists.push_back(key.text);
    } while (cursor != "0");
    co_return lists;
}
}  // namespace

std::string processing_list(const std::string& process)
{
    return processing_prefix + process;
}

std::string liveness_lock(const std::string& process)
{
    return "workers:alive:" + process;
}

asio::awaitable<void> seed(const redlock::redis& store, int count, int accounts)
{
    redlock::request push;
    for (int n = 1; n <= count; ++n)
        push.push("LPUSH", pending_list, "job-" + std::to_string(n) + ":account-" + std::to_string(n % accounts));
    redlock::response replies;
    co_await store.async_exec(push, replies, asio::use_awaitable);
}

asio::awaitable<std::optional<std::string>> job_queue::take(std::chrono::seconds wait)
{
    // Atomically off the pending list and onto ours: a crash after this leaves the job where recovery finds it.
    redlock::request move;
    move.push("BLMOVE", pending_list, processing_list(process_), "RIGHT", "LEFT", wait.count());
    move.set_timeout(wait + std::chrono::seconds(2));
    redlock::response reply;
    co_await store_.async_exec(move, reply, asio::use_awaitable);
    if (reply[0].is_null()) co_return std::nullopt;
    co_return reply[0].text;
}

asio::awaitable<void> job_queue::done(const std::string& job)
{
    redlock::request remove;
    remove.push("LREM", processing_list(process_), 1, job);
    redlock::response reply;
    co_await store_.async_exec(remove, reply, asio::use_awaitable);
}

asio::awaitable<void> job_queue::give_back(const std::string& job)
{
    redlock::request back;
    back.push("MULTI");
    back.push("LREM", processing_list(process_), 1, job);
    back.push("RPUSH", pending_list, job);
    back.push("EXEC");
    redlock::response reply;
    co_await store_.async_exec(back, reply, asio::use_awaitable);
}

asio::awaitable<int> recover_dead(redlock::client& locks, const redlock::redis& store, const std::string& self)
{
    int moved = 0;
    for (const auto& list : co_await processing_lists(store)) {
        const auto owner = list.substr(processing_prefix.size());
        if (owner == self) continue;
        // Free: its owner died (a live one holds it with the watchdog). Held by us while we move its jobs, so a
        // second process looking at the same list moves nothing twice.
        redlock::mutex alive(locks, liveness_lock(owner), {.ttl = std::chrono::seconds(5), .wait = {}});
        auto [ec, taken] = co_await alive.async_try_lock(asio::as_tuple(asio::use_awaitable));
        if (ec) continue;
        for (;;) {
            redlock::request back;
            back.push("LMOVE", list, pending_list, "RIGHT", "RIGHT");  // to the front of the line: it waited longest
            redlock::response reply;
            co_await store.async_exec(back, reply, asio::use_awaitable);
            if (reply[0].is_null()) break;
            ++moved;
        }
        co_await taken.async_release(asio::as_tuple(asio::use_awaitable));
    }
    co_return moved;
}

asio::awaitable<bool> drained(const redlock::redis& store)
{
    redlock::request len;
    len.push("LLEN", pending_list);
    redlock::response reply;
    co_await store.async_exec(len, reply, asio::use_awaitable);
    if (reply[0].as_integer() != 0) co_return false;
    co_return (co_await processing_lists(store)).empty();
}

}  // namespace workers
