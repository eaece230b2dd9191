// One connection attempt: a fresh stream (resolve, connect, TLS) and the handshake, all within connect_timeout.
// The handshake is one request in one write, answered in one round trip (handshake.hpp says what it holds and
// what its replies mean); it restores the subscriptions before the writer sends any queued request.
#if defined(__GNUC__) && !defined(__clang__)
// g++ 12 pairs the aligned_alloc of an Asio coroutine frame with the frame's own operator delete (which frees
// it correctly) and reports -Wmismatched-new-delete, for some frames only, as its inlining decides.
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif

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
    // The restores guess the server from the last session (subscriptions exist only after one).
    const bool guess = server().has_sharded_pubsub();
    const auto sent = make_handshake(config_, subscriptions_.to_restore(), guess);
    std::vector<std::string> dropped;  // channels the server unsubscribed on its own meanwhile
    response replies;
    if (auto ec = co_await exchange(sent, replies, dropped, diag)) co_return ec;
    auto outcome = read_handshake(sent, replies);
    if (!outcome.server_message.empty()) access::set_server_message(diag, outcome.server_message);
    if (!outcome.client_message.empty()) {
        access::set_client_message(
            diag, "unexpected handshake reply from " + config_.to_string() + ": " + outcome.client_message);
    }
    if (outcome.ec) co_return outcome.ec;
    set_server(outcome.server);
    const bool sharded = outcome.server.has_sharded_pubsub();
    if (!sent.channels.empty() && sharded != guess) {
        // The server changed across the reconnect: undo the restores, subscribe with its own command.
        const auto again = make_resubscribe(outcome.restored, guess, sent.channels, sharded);
        response more;
        if (auto ec = co_await exchange(again, more, dropped, diag)) co_return ec;
        const auto redone = read_handshake(again, more);
        if (redone.ec) {
            access::set_client_message(diag, "unexpected reply to the resubscription on " + config_.to_string() + ": " +
                                                 redone.client_message);
            co_return redone.ec;
        }
        outcome.restored = redone.restored;
        outcome.refused = redone.refused;
    }
    std::vector<std::string> lost;
    for (const auto& channel : outcome.refused)
        if (subscriptions_.restore_refused(channel)) lost.push_back(channel);
    for (const auto& channel : dropped) {
        if (subscriptions_.server_unsubscribed(channel)) {
            lost.push_back(channel);
            atomic_usage::add(stats_.subscriptions_lost);
        }
    }
    atomic_usage::add(stats_.subscribe_refusals, outcome.refused.size());
    atomic_usage::add(stats_.resubscribes, outcome.restored.size());
    pushes_.lost(std::move(lost));
    // Nothing is tracked yet: whoever relies on tracking reads its keys again (and so tracks them).
    if (sent.tracks_keys) {
        tracking_news news;
        news.all = outcome.tracking;
        news.refusal = outcome.tracking_refusal;
        pushes_.tracking(news);
    }
    co_return error_code{};
}

// Sends one exchange of the handshake and reads its replies.
asio::awaitable<error_code> connection_impl::exchange(const handshake_request& sent, response& replies,
                                                      std::vector<std::string>& dropped, diagnostics& diag)
{
    auto payload = sent.commands.payload();
    auto [wec, written] = co_await async_write(*transport_, asio::buffer(payload.data(), payload.size()), use_tuple);
    if (wec) {
        access::set_client_message(diag, "cannot send the handshake to " + config_.to_string() + ": " + wec.message());
        co_return wec;
    }
    const bool unsubscribes_sharded = !sent.undone.empty() && sent.undo_sharded;
    co_return co_await read_replies(sent.commands.expected_replies(), replies,
                                    unsubscribes_sharded ? nullptr : &dropped, diag);
}

// The handshake's replies, before the reader loop runs. A subscribe confirmation is the reply of a restoring
// subscribe; a message published between two of them goes to the handlers. With `dropped`, a `sunsubscribe` is no
// reply (the exchange sends no SUNSUBSCRIBE) but the server's own (a Cluster slot moved away): its channel goes there.
asio::awaitable<error_code> connection_impl::read_replies(std::size_t count, response& out,
                                                          std::vector<std::string>* dropped, diagnostics& diag)
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
                const auto kind = confirmation_kind(*value);
                if (!kind) continue;
                if (*kind == pubsub_kind::sunsubscribe && dropped) {
                    dropped->push_back(value->elements[1].text);
                    continue;
                }
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
