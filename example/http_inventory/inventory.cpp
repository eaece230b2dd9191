#include "inventory.hpp"

#if defined(__GNUC__) && !defined(__clang__)
// g++ 12 pairs the allocation of an Asio coroutine frame with the frame's own operator delete (which frees it
// correctly) and reports -Wmismatched-new-delete, for some frames only, as its inlining decides.
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif

#include <redlock/fenced_write.hpp>
#include <redlock/mutex.hpp>
#include <redlock/with_lock.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/system/system_error.hpp>

namespace http_inventory {

namespace asio = boost::asio;
using redlock::error;
constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);

item_keys item_keys::of(std::string_view item_id)
{
    const std::string tag = "{inventory:item:" + std::string(item_id) + "}";
    return {tag + ":stock", tag + ":orders", tag + ":guard", "inventory:lock:" + std::string(item_id)};
}

namespace {

// A request's deadline as a store request's own (0 would mean the connection's default: never send that).
void bound_by(redlock::request& req, const deadline& d)
{
    req.set_timeout(std::max(d.remaining(), std::chrono::milliseconds(1)));
}

// A store error on a request that may have changed data: a reply lost after sending is not a refusal.
write_status after_sent(redlock::error_code ec)
{
    if (ec == error::timeout || ec == error::connection_lost) return write_status::outcome_unknown;
    return write_status::unavailable;
}

// Why with_lock gave up. A cancellation (the drain's deadline) is not a status: the caller rethrows it.
write_status lock_failure(redlock::error_code ec)
{
    if (ec == error::not_acquired) return write_status::busy;
    if (ec == error::lost) return write_status::outcome_unknown;  // the body was cancelled midway
    return write_status::unavailable;
}

bool is_cancellation(redlock::error_code ec)
{
    return ec == asio::error::operation_aborted;
}

// A store request cancelled by the drain's deadline is not a store failure: the request ends and its connection
// closes without an answer (the client retries with its Idempotency-Key). A status would answer "nothing changed"
// of a write that was sent and may have landed.
void throw_if_cancelled(redlock::error_code ec)
{
    if (is_cancellation(ec)) throw boost::system::system_error(ec);
}

reservation failed(write_status why, std::string detail, std::string order_id = {})
{
    return {
        .status = reserve_status::failed, .failure = why, .order_id = std::move(order_id), .detail = std::move(detail)};
}

// The critical section of a reservation: claim and read, then take one.
asio::awaitable<reservation> reserve_while_held(const redlock::redis& store, item_keys keys, std::string order_id,
                                                std::uint64_t token, deadline d)
{
    claimed_read seen = co_await claim_and_read(store, keys, order_id, token, d);
    if (seen.early.status != reserve_status::failed || seen.early.failure != write_status::done)
        co_return std::move(seen.early);
    co_return co_await take_one(store, std::move(keys), std::move(order_id), seen.stock, token, d);
}

asio::awaitable<write_status> set_while_held(const redlock::redis& store, item_keys keys, std::int64_t stock,
                                             std::uint64_t token, deadline d)
{
    if (d.passed()) co_return write_status::deadline_passed;
    redlock::fenced_write w(keys.guard, token);
    w.command("SET", keys.stock, {stock});
    redlock::request req = w.to_request();
    bound_by(req, d);
    redlock::response replies;
    auto [ec] = co_await store.async_exec(req, replies, keys.guard, use_tuple);
    throw_if_cancelled(ec);
    if (ec && ec != error::server_error) co_return after_sent(ec);
    auto [outcome, newest] = redlock::fenced_write::outcome(replies.at(0));
    if (outcome == error::stale_token) co_return write_status::fenced_out;
    co_return outcome ? write_status::unavailable : write_status::done;
}

}  // namespace

// Fencing only the final write would not do: a holder that read the stock, stalled past its lease and then
// wrote would pass the check if the next holder had read the same count but not written yet, and both would take
// the same unit. The claim moves the guard before the read, so the stalled holder's write is refused.
asio::awaitable<claimed_read> claim_and_read(const redlock::redis& store, item_keys keys, std::string order_id,
                                             std::uint64_t token, deadline d)
{
    auto early = [&](reservation r) { return claimed_read{.early = std::move(r)}; };
    if (d.passed())
        co_return early(failed(write_status::deadline_passed, "deadline passed before the claim", order_id));
    redlock::fenced_write claim(keys.guard, token);
    claim.command("EXISTS", keys.stock);  // a fenced write needs a command: this one changes nothing
    redlock::request read = claim.to_request();
    read.push("GET", keys.stock);
    read.push("HGET", keys.orders, order_id);
    bound_by(read, d);
    redlock::response replies;
    auto [read_ec] = co_await store.async_exec(read, replies, keys.guard, use_tuple);  // the item's slot
    throw_if_cancelled(read_ec);
    if (read_ec && read_ec != error::server_error)
        co_return early(failed(write_status::unavailable, "claim: " + read_ec.message(), order_id));
    if (replies.size() != 3) co_return early(failed(write_status::unavailable, "claim: unexpected reply", order_id));
    auto [claim_ec, newest] = redlock::fenced_write::outcome(replies[0]);
    if (claim_ec == error::stale_token)
        co_return early(
            failed(write_status::fenced_out, "claim refused: token " + std::to_string(newest) + " is newer", order_id));
    if (claim_ec || replies[1].is_error() || replies[2].is_error())
        co_return early(failed(write_status::unavailable, "claim: " + redlock::resp::to_string(replies[0]), order_id));

    if (!replies[2].is_null())
        co_return early(reservation{.status = reserve_status::replayed,
                                    .order_id = order_id,
                                    .fencing_token = static_cast<std::uint64_t>(replies[2].as_integer().value_or(0))});
    if (replies[1].is_null())
        co_return early(reservation{.status = reserve_status::unknown_item, .order_id = order_id});
    const auto stock = replies[1].as_integer();
    if (!stock) co_return early(failed(write_status::unavailable, "the stock is not a number", order_id));
    if (*stock <= 0) co_return early(reservation{.status = reserve_status::sold_out, .order_id = order_id});
    co_return claimed_read{.early = failed(write_status::done, {}, order_id), .stock = *stock};
}

asio::awaitable<reservation> take_one(const redlock::redis& store, item_keys keys, std::string order_id,
                                      std::int64_t stock, std::uint64_t token, deadline d)
{
    if (d.passed()) co_return failed(write_status::deadline_passed, "deadline passed before the write", order_id);
    redlock::fenced_write take(keys.guard, token);
    take.command("SET", keys.stock, {stock - 1});
    take.command("HSET", keys.orders, {order_id, token});
    redlock::request write = take.to_request();
    bound_by(write, d);
    redlock::response written;
    auto [write_ec] = co_await store.async_exec(write, written, keys.guard, use_tuple);
    throw_if_cancelled(write_ec);
    if (write_ec && write_ec != error::server_error)
        co_return failed(after_sent(write_ec), "write: " + write_ec.message(), order_id);
    auto [take_ec, resource_token] = redlock::fenced_write::outcome(written.at(0));
    if (take_ec == error::stale_token)
        co_return failed(write_status::fenced_out,
                         "write refused: token " + std::to_string(resource_token) + " is newer", order_id);
    if (take_ec)
        co_return failed(write_status::unavailable, "write: " + redlock::resp::to_string(written[0]), order_id);
    co_return reservation{
        .status = reserve_status::reserved, .order_id = order_id, .fencing_token = token, .stock_left = stock - 1};
}

inventory::inventory(redlock::client& locks, redlock::redis store, std::chrono::milliseconds lock_ttl)
    : locks_(locks), store_(std::move(store)), lock_ttl_(lock_ttl)
{}

asio::awaitable<reservation> inventory::reserve(std::string item_id, std::string order_id, deadline d)
{
    const auto keys = item_keys::of(item_id);

    // Outside the lock, what needs no lock: a replay (orders are only ever added) and a sold-out item (so the
    // crowd that comes after the last unit is answered at once instead of queueing for the lock).
    redlock::request peek;
    peek.push("GET", keys.stock);
    peek.push("HGET", keys.orders, order_id);
    bound_by(peek, d);
    redlock::response seen;
    auto [peek_ec] = co_await store_.async_exec(peek, seen, keys.guard, use_tuple);
    throw_if_cancelled(peek_ec);
    if (peek_ec) co_return failed(write_status::unavailable, "store: " + peek_ec.message(), order_id);
    if (!seen[1].is_null())
        co_return reservation{.status = reserve_status::replayed,
                              .order_id = order_id,
                              .fencing_token = static_cast<std::uint64_t>(seen[1].as_integer().value_or(0))};
    if (seen[0].is_null()) co_return reservation{.status = reserve_status::unknown_item, .order_id = order_id};
    if (seen[0].as_integer().value_or(0) <= 0)
        co_return reservation{.status = reserve_status::sold_out, .order_id = order_id};

    // The lock waits at most what is left of the request's budget; release messages hand it from one request
    // to the next without polling. The watchdog (with_lock turns it on) keeps a slow store from outliving the
    // lease; fencing covers a holder that stalls anyway.
    redlock::mutex item_lock(locks_, keys.lock, {.ttl = lock_ttl_, .wait = d.remaining(), .fencing = true});
    const redlock::redis& store = store_;
    auto body = [&store, keys, order_id, d](const redlock::lease& held) {
        return reserve_while_held(store, keys, order_id, held.fencing_token(), d);
    };
    redlock::error_code lock_ec;
    try {
        co_return co_await redlock::with_lock(item_lock, body);
    } catch (const boost::system::system_error& e) {
        lock_ec = e.code();
    }
    if (is_cancellation(lock_ec)) throw boost::system::system_error(lock_ec);
    co_return failed(lock_failure(lock_ec), "lock: " + lock_ec.message(), order_id);
}

asio::awaitable<write_status> inventory::set_stock(std::string item_id, std::int64_t stock, deadline d)
{
    const auto keys = item_keys::of(item_id);
    redlock::mutex item_lock(locks_, keys.lock, {.ttl = lock_ttl_, .wait = d.remaining(), .fencing = true});
    const redlock::redis& store = store_;
    auto body = [&store, keys, stock, d](const redlock::lease& held) {
        return set_while_held(store, keys, stock, held.fencing_token(), d);
    };
    redlock::error_code lock_ec;
    try {
        co_return co_await redlock::with_lock(item_lock, body);
    } catch (const boost::system::system_error& e) {
        lock_ec = e.code();
    }
    if (is_cancellation(lock_ec)) throw boost::system::system_error(lock_ec);
    co_return lock_failure(lock_ec);
}

asio::awaitable<item_state> inventory::get(std::string item_id, deadline d)
{
    const auto keys = item_keys::of(item_id);
    redlock::request req;
    req.push("GET", keys.stock);
    req.push("HLEN", keys.orders);
    bound_by(req, d);
    redlock::response replies;
    co_await store_.async_exec(req, replies, keys.guard, asio::use_awaitable);
    if (replies[0].is_null()) co_return item_state{};
    co_return item_state{
        .exists = true, .stock = replies[0].as_integer().value_or(0), .reserved = replies[1].as_integer().value_or(0)};
}

}  // namespace http_inventory
