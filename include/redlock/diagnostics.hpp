// Text that does not fit in an error_code: the server's error message, or what the library found wrong.
#pragma once

#include <redlock/error.hpp>

#include <string>
#include <string_view>
#include <vector>

namespace redlock {

namespace detail {
struct access;
}

/// What one node said in a quorum operation (lock, extend, release).
struct node_outcome {
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

    void clear() noexcept
    {
        client_message_.clear();
        server_message_.clear();
        nodes_.clear();
    }

private:
    friend struct detail::access;  // the library fills it in
    std::string client_message_;
    std::string server_message_;
    std::vector<node_outcome> nodes_;
};

}  // namespace redlock
