// Text that does not fit in an error_code: the server's error message, or what the library found wrong.
#pragma once

#include <string>
#include <string_view>

namespace redlock {

class diagnostics {
public:
    /// What the library found wrong (a bad URL, an unexpected reply...). Empty when the server spoke.
    std::string_view client_message() const noexcept { return client_message_; }
    /// The server's error reply, verbatim (e.g. "WRONGPASS invalid username-password pair...").
    std::string_view server_message() const noexcept { return server_message_; }
    /// Whichever of the two is set, server first: the text to show a person.
    std::string_view message() const noexcept { return server_message_.empty() ? client_message_ : server_message_; }

    void set_client_message(std::string text) { client_message_ = std::move(text); }
    void set_server_message(std::string text) { server_message_ = std::move(text); }
    void clear() noexcept
    {
        client_message_.clear();
        server_message_.clear();
    }

private:
    std::string client_message_;
    std::string server_message_;
};

}  // namespace redlock
