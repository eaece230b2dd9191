// Text that does not fit in an error_code: the server's error message, or what the library found wrong.
#pragma once

#include <redlock/error.hpp>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace redlock {

namespace detail {
struct access;
}

/// What one node said in a quorum operation (lock, extend, release).
struct node_outcome {
    /// What the node's answer counted as in the quorum tally.
    enum class result {
        granted,  ///< yes: granted, extended or released
        refused,  ///< answered: another owner holds the lock
        failed,   ///< error: timed out, not connected, or an error reply (see `ec` and `message`)
        pending,  ///< had not answered when the outcome was decided
    };
    std::string node;  ///< the node's URL without password
    result what = result::pending;
    error_code ec;
    std::string message;  ///< the server's error text, if any
};

/// How an acquire waited, over all its attempts: the cause of each retry, so a test or a log can tell a
/// wake-up by a release message from a retry at the holder's TTL.
struct wait_summary {
    std::uint32_t attempts = 0;  ///< acquire attempts sent
    /// Retries that a release message started (or client tracking's news that the holder's key changed).
    std::uint32_t woken_by_release = 0;
    std::uint32_t timed_retries = 0;  ///< retries that a timer started (the holder's TTL, or a retry delay)
    bool notified = false;  ///< release messages were subscribed on enough nodes to be relied on while it waited
};

/// What an operation found beyond its error_code: the server's or the library's text, what each node answered,
/// how an acquire waited. Pass one to the overload that takes it; it must outlive the operation and is filled in
/// by the time the operation completes (read it then, on one thread). clear() makes it reusable.
class diagnostics {
public:
    /// What the library found wrong (a bad URL, an unexpected reply...). Empty when the server spoke.
    std::string_view client_message() const noexcept { return client_message_; }
    /// The server's error reply, verbatim (e.g. "WRONGPASS invalid username-password pair...").
    std::string_view server_message() const noexcept { return server_message_; }
    /// Whichever of the two is set, server first: the text to show a person.
    std::string_view message() const noexcept { return server_message_.empty() ? client_message_ : server_message_; }

    /// Per node, for quorum operations: who granted, refused, failed and why. Empty otherwise.
    const std::vector<node_outcome>& nodes() const noexcept { return nodes_; }

    /// For acquires (async_lock...): how it waited.
    const wait_summary& waiting() const noexcept { return waiting_; }

    void clear() noexcept
    {
        client_message_.clear();
        server_message_.clear();
        nodes_.clear();
        waiting_ = {};
    }

private:
    friend struct detail::access;  // the library fills it in
    std::string client_message_;
    std::string server_message_;
    std::vector<node_outcome> nodes_;
    wait_summary waiting_;
};

}  // namespace redlock
