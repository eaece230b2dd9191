// One connection attempt: a fresh stream (resolve, connect, TLS) and the handshake, all within connect_timeout.
// The handshake is one request in one write, answered in one round trip (handshake.hpp says what it holds and
// what its replies mean); it restores the subscriptions before the writer sends any queued request.
#include "connection/connection_impl.hpp"
#include "connection/handshake.hpp"

#include <redlock/detail/access.hpp>

namespace redlock::detail {

namespace asio = boost::asio;

asio::awaitable<error_code> connection_impl::connect_once(diagnostics& diag)
{
    transport_ = factory_ ? factory_(strand_) : make_transport(strand_, config_);
    reader_.reset();
    loaded_scripts_.clear();  // a new server process may not know them
    const auto generation = ++connect_generation_;
    connect_timed_out_ = false;
    connect_timer_.expires_after(config_.connect_timeout);
    connect_timer_.async_wait([self = shared_from_this(), generation](error_code ec) {
        if (ec || generation != self->connect_generation_) return;
        self->connect_timed_out_ = true;
        self->transport_->close();
    });

    auto [ec] = co_await async_connect(*transport_, diag, use_tuple);
    if (!ec) ec = co_await handshake(diag);
    connect_timer_.cancel();
    ++connect_generation_;  // a timer callback already queued must not close the next transport
    if (ec && connect_timed_out_) {
        diag.clear();
        access::set_client_message(diag, "no answer from " + config_.to_string() + " within the connect timeout of " +
                                             std::to_string(config_.connect_timeout.count()) + " ms");
        ec = error::timeout;
    }
    co_return ec;
}

asio::awaitable<error_code> connection_impl::handshake(diagnostics& diag)
{
    const auto sent = make_handshake(config_, subscriptions_.to_restore());
    auto payload = sent.commands.payload();
    auto [wec, written] = co_await async_write(*transport_, asio::buffer(payload.data(), payload.size()), use_tuple);
    if (wec) {
        access::set_client_message(diag, "cannot send the handshake to " + config_.to_string() + ": " + wec.message());
        co_return wec;
    }
    response replies;
    if (auto ec = co_await read_replies(sent.commands.expected_replies(), replies, diag)) co_return ec;
    const auto outcome = read_handshake(sent, replies);
    if (!outcome.server_message.empty()) access::set_server_message(diag, outcome.server_message);
    if (!outcome.client_message.empty()) {
        access::set_client_message(
            diag, "unexpected handshake reply from " + config_.to_string() + ": " + outcome.client_message);
    }
    if (outcome.ec) co_return outcome.ec;
    server_version_.store(outcome.server_version, std::memory_order_relaxed);
    for (const auto& channel : outcome.refused) subscriptions_.restore_refused(channel);
    atomic_usage::add(stats_.subscribe_refusals, outcome.refused.size());
    atomic_usage::add(stats_.resubscribes, outcome.restored.size());
    co_return error_code{};
}

// The handshake's replies, before the reader loop runs. A subscribe confirmation is the reply of a restoring
// SUBSCRIBE; a message published between two of them goes to the handlers.
asio::awaitable<error_code> connection_impl::read_replies(std::size_t count, response& out, diagnostics& diag)
{
    for (;;) {
        error_code ec;
        while (out.size() < count) {
            auto value = reader_.next(ec);
            if (ec) {
                access::set_client_message(diag, "malformed reply from " + config_.to_string() + ": " + ec.message());
                co_return error::protocol_error;
            }
            if (!value) break;
            if (value->data_type == resp::type::push) {
                atomic_usage::add(stats_.pushes);
                pushes_.deliver(*value);
                if (!confirmation_kind(*value)) continue;
            }
            out.push_back(std::move(*value));
        }
        if (out.size() == count) co_return error_code{};
        auto space = reader_.prepare(4096);
        auto [rec, n] = co_await async_read_some(*transport_, asio::buffer(space.data(), space.size()), use_tuple);
        if (rec) {
            access::set_client_message(
                diag, "connection to " + config_.to_string() + " closed during the handshake: " + rec.message());
            co_return rec;
        }
        reader_.commit(n);
        atomic_usage::add(stats_.bytes_read, n);
    }
}

}  // namespace redlock::detail
