// The resource side of fencing, for data kept in Redis: writes applied only if their fencing token is not
// below the highest token the resource has accepted.
#pragma once

#include <redlock/error.hpp>
#include <redlock/redis.hpp>
#include <redlock/request.hpp>
#include <redlock/response.hpp>

#include <boost/asio/async_result.hpp>
#include <boost/asio/compose.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/post.hpp>

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

namespace redlock {

/// Writes to apply under a fencing token (lease::fencing_token()), in one script that first compares the
/// token with the resource's guard key: if the token is below the guard's value, nothing is written;
/// otherwise the commands run in order and the guard takes the token. Equal tokens pass: one holder may
/// write many times. Give the guard no TTL: it must remember the highest token for as long as an older holder
/// might still write. On a Redis Cluster, the guard and every key written must share one hash slot (e.g.
/// "{account:42}:fence" with "{account:42}:balance").
class fenced_write {
public:
    fenced_write(std::string guard, std::uint64_t token);

    /// One command writing `key`, with its other arguments after it: command("HSET", "user:7", {"name",
    /// "Ada"}) runs HSET user:7 name Ada. Commands run atomically with the check. A command that fails
    /// (WRONGTYPE) ends the script there: earlier commands stay applied, the guard does not advance.
    fenced_write& command(std::string_view name, std::string key, std::initializer_list<arg> args = {});

    const std::string& guard() const noexcept { return keys_.front(); }
    std::uint64_t token() const noexcept { return token_; }

    /// What is wrong with this write (token 0, no command, an empty key), or an empty string.
    std::string invalid() const;
    /// The script call, to pipeline with other commands in one request (redis::async_exec, routed by guard());
    /// interpret its reply with outcome().
    request to_request() const;
    /// From the script's reply: success and the token (written), error::stale_token and the guard's newer
    /// token (refused), error::server_error for an error reply (a command failed: the reply holds its text),
    /// error::protocol_error for anything else.
    static std::tuple<error_code, std::uint64_t> outcome(const resp::value& reply);

private:
    std::uint64_t token_;
    std::vector<std::string> keys_;  // the guard, then the key of each command
    std::vector<std::string> args_;  // the token, then per command: name, argument count, arguments
};

namespace detail {
struct fenced_write_op {
    struct exchange {
        exchange(request r, std::string key) : req(std::move(r)), routing_key(std::move(key)) {}
        request req;
        std::string routing_key;  // the guard: every key of the write shares its hash slot
        response resp;
    };
    redis store;
    std::unique_ptr<exchange> io;  // stays put while the op moves: the store keeps references to it
    bool valid;
    bool started = false;

    template <class Self>
    void operator()(Self& self, error_code ec = {})
    {
        if (!started) {
            started = true;
            if (!valid) return boost::asio::post(std::move(self));
            // Named first: the handler is built from `self` (moving `store` and `io`) before the call runs.
            const redis s = store;
            exchange& x = *io;
            return s.async_exec(x.req, x.resp, x.routing_key, std::move(self));
        }
        if (!valid) return self.complete(make_error_code(error::invalid_argument), std::uint64_t{0});
        if (ec && ec != error::server_error) return self.complete(ec, std::uint64_t{0});
        if (io->resp.size() != 1) return self.complete(make_error_code(error::protocol_error), std::uint64_t{0});
        auto [result, resource_token] = fenced_write::outcome(io->resp.front());
        self.complete(result, resource_token);
    }
};
}  // namespace detail

/// Sends `write` to `store` (the Redis deployment that keeps the resource, usually not a lock node), routed by the
/// guard key. Completes with: success and the token, the write applied; error::stale_token and the newer token the
/// resource already accepted (nothing written: this holder's lease has been superseded, stop writing);
/// error::invalid_argument before any I/O; or the store's errors (redis::async_exec), with 0.
/// Signature: void(error_code, std::uint64_t), on the handler's associated executor (the store's executor for a
/// handler without one), never inline. Cancellation: as redis::async_exec. Lifetime: none (the write is copied,
/// the store shared).
template <boost::asio::completion_token_for<void(error_code, std::uint64_t)> Token = boost::asio::deferred_t>
auto async_fenced_write(const redis& store, const fenced_write& write, Token&& token = {})
{
    return boost::asio::async_compose<Token, void(error_code, std::uint64_t)>(
        detail::fenced_write_op{store,
                                std::make_unique<detail::fenced_write_op::exchange>(write.to_request(), write.guard()),
                                write.invalid().empty()},
        token, store.get_executor());
}

}  // namespace redlock
