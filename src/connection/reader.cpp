// The reader loop: reads what the server sends and hands each complete value to the multiplexer, which knows
// whose reply it is, or to the push handlers. Malformed bytes, or a reply nobody asked for, mean the stream is
// out of step: the connection closes with protocol_error (and reopens).
#include "connection/connection_impl.hpp"

#include <optional>

namespace redlock::detail {

namespace asio = boost::asio;

void connection_impl::on_value(resp::value& value, error_code& ec)
{
    // The raw push handler sees confirmations too, but the multiplexer moves them to their request.
    std::optional<resp::value> copy;
    if (pushes_.wants_raw() && value.data_type == resp::type::push && confirmation_kind(value)) copy = value;
    switch (mpx_.consume(value)) {
        case multiplexer::consumed::reply:
            atomic_usage::add(stats_.replies);
            break;
        case multiplexer::consumed::confirmation:
            atomic_usage::add(stats_.pushes);
            if (copy) pushes_.deliver(*copy);  // `value` went to its request
            break;
        case multiplexer::consumed::push:
            atomic_usage::add(stats_.pushes);
            pushes_.deliver(value);
            if (confirmation_kind(value) == pubsub_kind::sunsubscribe) on_server_unsubscribed(value.elements[1].text);
            break;
        case multiplexer::consumed::unsolicited:
            ec = error::protocol_error;
            break;
    }
}

// A `sunsubscribe` nobody asked for: a Cluster master dropped a sharded channel whose slot it no longer owns.
void connection_impl::on_server_unsubscribed(const std::string& channel)
{
    if (subscriptions_.server_unsubscribed(channel)) {
        atomic_usage::add(stats_.subscriptions_lost);
        pushes_.lost({channel});
    }
}

asio::awaitable<error_code> connection_impl::reader_loop()
{
    for (;;) {
        error_code ec;
        while (auto value = reader_.next(ec)) {
            on_value(*value, ec);
            if (ec) co_return stop_serving(ec);
        }
        if (ec) co_return stop_serving(error::protocol_error);
        auto space = reader_.prepare(16 * 1024);
        auto [rec, n] = co_await async_read_some(*transport_, asio::buffer(space.data(), space.size()), use_tuple);
        if (rec) co_return stop_serving(state() == connection_state::closed ? make_error_code(error::closed) : rec);
        reader_.commit(n);
        waiting_since_ = clock::now();
        atomic_usage::add(stats_.bytes_read, n);
    }
}

}  // namespace redlock::detail
