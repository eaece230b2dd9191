// The stock of each item, kept in the store Redis and changed only under the item's lock, by writes fenced
// with the lock's token.
#pragma once

#include "deadline.hpp"

#include <redlock/client.hpp>
#include <redlock/redis.hpp>

#include <boost/asio/awaitable.hpp>

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

namespace http_inventory {

/// Where an item lives. The store keys share one hash tag, so the fenced scripts touch one Cluster slot.
struct item_keys {
    std::string stock;   ///< the count left (a decimal string)
    std::string orders;  ///< a hash: order id -> the fencing token that wrote it
    std::string guard;   ///< the highest fencing token the item's data accepted
    std::string lock;    ///< the lock key on the lock nodes

    static item_keys of(std::string_view item_id);
};

/// What a write under the lock came to. Every value but done means nothing was changed, except
/// outcome_unknown: the write was sent and its answer was lost; a retry with the same order id finds out.
enum class write_status {
    done,
    busy,             ///< another request held the lock for the whole wait
    unavailable,      ///< too few lock nodes, or the store, answered
    fenced_out,       ///< a newer holder of the lock wrote first: this lease had been superseded
    outcome_unknown,  ///< the write was sent but not confirmed (timeout, connection lost, lease lost meanwhile)
    deadline_passed,  ///< the request's budget ran out before the write
};

enum class reserve_status {
    reserved,      ///< one unit taken for this order
    replayed,      ///< this order id had already reserved one: nothing more taken
    sold_out,      ///< stock 0
    unknown_item,  ///< no stock was ever set
    failed,        ///< see reservation::failure
};

struct reservation {
    reserve_status status = reserve_status::failed;
    write_status failure = write_status::done;  ///< when status is failed
    std::string order_id{};
    std::uint64_t fencing_token = 0;  ///< the token the order was written with (reserved, replayed)
    std::int64_t stock_left = 0;      ///< after a reservation
    std::string detail{};             ///< for logs: the error behind a failure
};

struct item_state {
    bool exists = false;
    std::int64_t stock = 0;
    std::int64_t reserved = 0;  ///< orders recorded
};

/// What the critical section read after its claim: the order's earlier reservation or the stock.
struct claimed_read {
    reservation early;  ///< status failed with failure done: go on with take_one; anything else is the answer
    std::int64_t stock = 0;
};

/// The two steps of a reservation's critical section, run while the item's lock is held with fencing token
/// `token` (inventory::reserve runs them under with_lock; the tests interleave two holders between them).
/// claim_and_read: a fenced write that only advances the item's guard to `token`, pipelined with the reads; from
/// then on a holder with an older token can no longer write. take_one: the fenced write of stock - 1 and the
/// order. A cancellation (the drain's deadline) throws boost::system::system_error(operation_aborted) rather than
/// answer a status: the write may have been sent.
boost::asio::awaitable<claimed_read> claim_and_read(const redlock::redis& store, item_keys keys, std::string order_id,
                                                    std::uint64_t token, deadline d);
boost::asio::awaitable<reservation> take_one(const redlock::redis& store, item_keys keys, std::string order_id,
                                             std::int64_t stock, std::uint64_t token, deadline d);

class inventory {
public:
    /// `locks`: the N lock nodes; `store`: the Redis of the data. Both must outlive the inventory.
    inventory(redlock::client& locks, redlock::redis store, std::chrono::milliseconds lock_ttl);

    /// Takes one unit of `item` for `order_id`, unless that order already took one. Cancelled (the drain's
    /// deadline), it throws boost::system::system_error(operation_aborted), its lock released.
    boost::asio::awaitable<reservation> reserve(std::string item_id, std::string order_id, deadline d);

    /// Sets the stock of `item` (creating it); orders already taken stay recorded.
    boost::asio::awaitable<write_status> set_stock(std::string item_id, std::int64_t stock, deadline d);

    /// The item's stock and how many orders it has; throws boost::system::system_error when the store fails.
    boost::asio::awaitable<item_state> get(std::string item_id, deadline d);

private:
    redlock::client& locks_;
    redlock::redis store_;
    std::chrono::milliseconds lock_ttl_;
};

}  // namespace http_inventory
