// Error codes of the library and the conditions callers test against.
#pragma once

#include <boost/system/error_code.hpp>

#include <ostream>
#include <type_traits>

namespace redlock {

/// boost::system::error_code: the first argument of every completion of the library.
using error_code = boost::system::error_code;

/// Specific failures reported by the library (category "redlock").
enum class error {
    invalid_argument = 1,  ///< bad input (URL, option, key): reported before any I/O
    not_connected,         ///< the node is down or reconnecting; the request was never sent
    connection_lost,       ///< the connection broke after the request was written: it may or may not have run
    timeout,               ///< a deadline of ours expired (request, connect, health check)
    protocol_error,        ///< the server sent bytes that are not RESP, or too large or deep to accept
    server_error,          ///< the server answered with an error reply; its text is in the diagnostics
    auth_failed,           ///< wrong password, unknown or disabled user
    unsupported_server,    ///< the server does not speak RESP3 (HELLO 3): Redis older than 6
    tls_error,             ///< TLS handshake or certificate verification failed
    closed,                ///< the connection was closed by its owner
    no_quorum,             ///< too few nodes answered to decide
    not_acquired,          ///< the nodes answered, but another owner holds the lock
    not_owner,             ///< extend or release of a lock that is not (or no longer) ours
    lost,                  ///< the lease expired or could not be extended in time
    stale_token,           ///< a fenced write carried a fencing token below one the resource already accepted
    rate_limited,          ///< a rate limiter had no room for the call within its wait
    load_failed,           ///< a cache loader threw something other than a system_error (its text: diagnostics)
    /// a semaphore request for more permits than the limit the nodes store (a set_limit, or the process that
    /// created the semaphore, made it smaller than the caller's): no wait can grant it, so it fails at once (the
    /// stored limit: diagnostics)
    exceeds_limit,
    /// with replica acknowledgement on (lock_options::replica_acks): nodes granted (or extended, or committed a
    /// fencing token), but too few of their replicas acknowledged the write within the WAIT's timeout, so those
    /// grants did not count and were released (which nodes, and how many replicas did: diagnostics)
    replica_acks,
};

/// Classes of errors, for `ec == redlock::condition::timeout` style tests.
enum class condition {
    not_acquired = 1,  ///< the lock is held by someone else (not_acquired), a limiter has no room (rate_limited),
                       ///< or a semaphore has not that many permits (exceeds_limit)
    timeout,           ///< a deadline expired (ours, or an Asio/OS timeout)
    connection,        ///< the node (or a quorum of nodes) could not be reached, or the link broke (ours and OS errors)
    protocol,          ///< malformed bytes from the peer (protocol_error and every RESP parser error)
};

const boost::system::error_category& error_category() noexcept;
const boost::system::error_category& condition_category() noexcept;

inline error_code make_error_code(error e) noexcept
{
    return {static_cast<int>(e), error_category()};
}
inline boost::system::error_condition make_error_condition(condition c) noexcept
{
    return {static_cast<int>(c), condition_category()};
}

inline std::ostream& operator<<(std::ostream& os, error e)
{
    return os << make_error_code(e).message();
}
inline std::ostream& operator<<(std::ostream& os, condition c)
{
    return os << make_error_condition(c).message();
}

}  // namespace redlock

template <>
struct boost::system::is_error_code_enum<redlock::error> : std::true_type {};
template <>
struct boost::system::is_error_condition_enum<redlock::condition> : std::true_type {};
