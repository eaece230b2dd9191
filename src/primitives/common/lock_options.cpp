// lock_options::invalid(): the checks every lock call makes of its options before any I/O.
#include "primitives/common/heartbeat_budget.hpp"
#include "primitives/common/validity.hpp"

#include <redlock/lock_options.hpp>

namespace redlock {

std::string lock_options::invalid() const
{
    using detail::drift;
    const auto& o = *this;
    if (o.ttl <= ms(0)) return "ttl must be positive";
    if (o.ttl > lock_options::max_ttl) return "ttl must be at most 30 days (lock_options::max_ttl); use the watchdog";
    if (o.wait < ms(0)) return "wait must not be negative";
    if (o.node_timeout < ms(0) || o.node_timeout >= o.ttl) return "node_timeout must be in [0, ttl)";
    if (o.retry_delay < ms(0) || o.retry_jitter < ms(0)) return "retry_delay and retry_jitter must not be negative";
    if (!(o.drift_factor >= 0.0 && o.drift_factor < 0.5)) return "drift_factor must be in [0, 0.5)";
    if (drift(o.ttl, o.drift_factor) >= o.ttl) return "ttl is too short for the clock drift allowance";
    if (o.min_validity < ms(0) || o.min_validity >= o.ttl) return "min_validity must be in [0, ttl)";
    const auto validity = o.ttl - std::chrono::duration_cast<ms>(drift(o.ttl, o.drift_factor));
    if (o.extend_interval < ms(0) || o.extend_interval >= validity)
        return "extend_interval must be in [0, ttl - drift): the watchdog would extend too late";
    if (o.watchdog && o.extend_interval == ms(0) && o.ttl / 3 >= validity)
        return "ttl is too short for the watchdog: ttl / 3 must be below the validity (ttl - drift)";
    if (o.max_hold < ms(0)) return "max_hold must not be negative";
    if (o.replica_acks < 0) return "replica_acks must not be negative";
    if (o.replica_ack_timeout < ms(0)) return "replica_ack_timeout must not be negative";
    const auto node_timeout = o.node_timeout > ms(0) ? o.node_timeout : detail::default_node_timeout(o.ttl);
    const auto request_time = detail::request_time(node_timeout, o.replica_acks, o.replica_ack_timeout);
    if (o.replica_acks > 0 && request_time >= validity)
        return "node_timeout + replica_ack_timeout must be below the validity (ttl - drift): a grant that waits for "
               "its replicas that long would never be valid";
    if (o.fair) return detail::heartbeat_budget_problem(o, "a fair waiter");
    return {};
}

namespace detail {

std::string heartbeat_budget_problem(const lock_options& o, std::string_view waiter)
{
    using ms = std::chrono::milliseconds;
    if (o.waiter_ttl < ms(100) || o.waiter_ttl > std::chrono::hours(1)) return "waiter_ttl must be in [100 ms, 1 h]";
    // A request that carries a WAIT may take its node timeout plus the WAIT's: T below.
    const auto node_timeout = o.node_timeout > ms(0) ? o.node_timeout : default_node_timeout(o.ttl);
    const auto t = request_time(node_timeout, o.replica_acks, o.replica_ack_timeout);
    // The heartbeat budget. A waiter heartbeats on a node when its attempt's script runs there: at s, between the
    // request leaving (t) and a node timeout T later (or never: that node has its place, or its mark, again at the
    // next heartbeat that reaches it). The attempt answers by t + T. The next one leaves at most waiter_ttl / 3 after
    // that answer (acquire_loop: the pause and the wait for subscriptions together; a queued waiter skips the
    // client's attempt gate, where other waiters' attempts could hold it any time), and runs on the node by T later.
    // So heartbeats come at most T + waiter_ttl / 3 + T apart, below waiter_ttl iff waiter_ttl > 3 T. (A first
    // attempt over N nodes sends two requests, the ticket's first: it heartbeats with the second, and joins with it.)
    // With replica acknowledgement T is the node timeout plus the WAIT's.
    if (3 * t >= o.waiter_ttl)
        return o.replica_acks > 0
                   ? "waiter_ttl must be above 3 times node_timeout + replica_ack_timeout (" + std::string(waiter) +
                         "'s heartbeats come up to waiter_ttl / 3 plus two request deadlines apart)"
                   : "waiter_ttl must be above 3 node timeouts (" + std::string(waiter) +
                         "'s heartbeats come up to waiter_ttl / 3 plus two node timeouts apart)";
    return {};
}

}  // namespace detail

}  // namespace redlock
