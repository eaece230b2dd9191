#include <redlock/error.hpp>

#include <boost/asio/error.hpp>
#include <boost/asio/ssl/error.hpp>

#include <string>

namespace redlock {
namespace {

class error_category_impl final : public boost::system::error_category {
public:
    const char* name() const noexcept override { return "redlock"; }

    std::string message(int ev) const override
    {
        switch (static_cast<error>(ev)) {
            case error::invalid_argument:
                return "invalid argument";
            case error::not_connected:
                return "not connected to the node";
            case error::connection_lost:
                return "connection lost after the request was sent (it may have run)";
            case error::timeout:
                return "deadline expired";
            case error::protocol_error:
                return "protocol error: the server sent malformed or oversized data";
            case error::server_error:
                return "the server answered with an error";
            case error::auth_failed:
                return "authentication failed";
            case error::unsupported_server:
                return "the server does not support RESP3 (Redis >= 6 required)";
            case error::tls_error:
                return "TLS handshake or certificate verification failed";
            case error::closed:
                return "connection closed";
            case error::no_quorum:
                return "no quorum: too few nodes answered";
            case error::not_acquired:
                return "not acquired: held by others";
            case error::not_owner:
                return "not the owner of the lock";
            case error::lost:
                return "the lease was lost";
            case error::stale_token:
                return "a newer fencing token has already written to the resource";
            case error::rate_limited:
                return "rate limited: no room for the call within the wait";
            case error::load_failed:
                return "the cache loader failed";
            case error::exceeds_limit:
                return "more permits asked than the semaphore's limit stored on the nodes";
            case error::replica_acks:
                return "not acknowledged by enough replicas in time";
        }
        return "redlock error " + std::to_string(ev);
    }

    boost::system::error_condition default_error_condition(int ev) const noexcept override
    {
        switch (static_cast<error>(ev)) {
            case error::not_acquired:
            case error::rate_limited:
            case error::exceeds_limit:
                return condition::not_acquired;
            case error::timeout:
                return condition::timeout;
            case error::no_quorum:
            case error::not_connected:
            case error::connection_lost:
            case error::tls_error:
            case error::closed:
                return condition::connection;
            case error::protocol_error:
                return condition::protocol;
            default:
                return {ev, *this};
        }
    }
};

bool is_socket_error(const error_code& ec)
{
    namespace ae = boost::asio::error;
    return ec == ae::connection_refused || ec == ae::connection_reset || ec == ae::connection_aborted ||
           ec == ae::broken_pipe || ec == ae::eof || ec == ae::host_unreachable || ec == ae::network_unreachable ||
           ec == ae::network_down || ec == ae::host_not_found || ec == ae::host_not_found_try_again ||
           ec == ae::not_connected || ec == ae::shut_down || ec.category() == boost::asio::error::get_ssl_category();
}

class condition_category_impl final : public boost::system::error_category {
public:
    const char* name() const noexcept override { return "redlock.condition"; }

    std::string message(int ev) const override
    {
        switch (static_cast<condition>(ev)) {
            case condition::not_acquired:
                return "the lock, the rate limiter's room or the semaphore's permits were not acquired";
            case condition::timeout:
                return "a deadline expired";
            case condition::connection:
                return "the node could not be reached or the connection broke";
            case condition::protocol:
                return "the peer sent malformed data";
        }
        return "redlock condition " + std::to_string(ev);
    }

    bool equivalent(const error_code& ec, int cond) const noexcept override
    {
        if (ec.category() == redlock::error_category())
            return ec.default_error_condition() == boost::system::error_condition(cond, *this);
        switch (static_cast<condition>(cond)) {
            case condition::timeout:
                return ec == boost::asio::error::timed_out;
            case condition::connection:
                return is_socket_error(ec);
            case condition::protocol:
                return std::string_view(ec.category().name()) == "redlock.resp";
            default:
                return false;
        }
    }
    using error_category::equivalent;
};

}  // namespace

const boost::system::error_category& error_category() noexcept
{
    static const error_category_impl instance;
    return instance;
}

const boost::system::error_category& condition_category() noexcept
{
    static const condition_category_impl instance;
    return instance;
}

}  // namespace redlock
