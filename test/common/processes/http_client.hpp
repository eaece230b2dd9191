// A small HTTP/1.1 client on Beast for tests of HTTP services: one request per connection, every outcome
// recorded (a refused connection or a timeout is a result too, not an exception).
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/beast/http/verb.hpp>
#include <boost/system/error_code.hpp>

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace redlock::test {

struct http_reply {
    unsigned status = 0;  ///< 0 when no response came (see error)
    std::string body{};
    std::map<std::string, std::string> headers;  ///< names lower-cased
    boost::system::error_code error;             ///< what failed before a complete response

    std::string header(const std::string& lower_name) const
    {
        auto it = headers.find(lower_name);
        return it == headers.end() ? std::string() : it->second;
    }
};

struct http_call {
    boost::beast::http::verb method = boost::beast::http::verb::get;
    std::string target = "/";
    std::string body{};
    std::vector<std::pair<std::string, std::string>> headers{};
    std::chrono::milliseconds timeout{10'000};  ///< connect + write + read
};

/// Sends `call` to 127.0.0.1:`port` on a new connection and reads the response (on the caller's executor).
boost::asio::awaitable<http_reply> async_http(std::uint16_t port, http_call call);

/// The same from a plain thread: runs its own io_context.
http_reply send_http(std::uint16_t port, http_call call);

/// The raw text of a JSON member `"name": value` in `body` (strings without their quotes); nullopt if absent.
/// Enough for the flat objects the services under test answer.
std::optional<std::string> json_member(const std::string& body, const std::string& name);

}  // namespace redlock::test
