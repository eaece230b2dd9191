#include "connection/handshake.hpp"
#include "connection/multiplexer.hpp"
#include "connection/server_version.hpp"

namespace redlock::detail {

namespace {
void push_subscribes(handshake_request& out, std::vector<std::string> channels, bool sharded)
{
    for (const auto& channel : channels) out.commands.push(sharded ? "SSUBSCRIBE" : "SUBSCRIBE", channel);
    out.channels = std::move(channels);
    out.sharded = sharded;
}
}  // namespace

handshake_request make_handshake(const node_config& config, std::vector<std::string> channels, bool sharded)
{
    handshake_request out;
    std::vector<std::string> hello{"3"};
    if (!config.password.empty()) {
        hello.insert(hello.end(), {"AUTH", config.username.empty() ? "default" : config.username, config.password});
    }
    if (!config.client_name.empty()) hello.insert(hello.end(), {"SETNAME", config.client_name});
    out.commands.push_range("HELLO", hello);
    out.selects_db = config.db != 0;
    if (out.selects_db) out.commands.push("SELECT", config.db);
    out.tracks_keys = config.track_keys;
    if (out.tracks_keys) out.commands.push("CLIENT", "TRACKING", "on", "NOLOOP");
    push_subscribes(out, std::move(channels), sharded);
    return out;
}

handshake_request make_resubscribe(std::vector<std::string> undo, bool undo_sharded, std::vector<std::string> channels,
                                   bool sharded)
{
    handshake_request out;
    out.says_hello = false;
    if (!undo.empty()) out.commands.push_range(undo_sharded ? "SUNSUBSCRIBE" : "UNSUBSCRIBE", undo);
    out.undone = std::move(undo);
    out.undo_sharded = undo_sharded;
    push_subscribes(out, std::move(channels), sharded);
    return out;
}

namespace {

error_code hello_error(std::string_view text)
{
    if (text.starts_with("NOPROTO") || text.starts_with("ERR unknown command")) return error::unsupported_server;
    if (text.starts_with("WRONGPASS") || text.starts_with("NOAUTH") || text.starts_with("NOPERM"))
        return error::auth_failed;
    return error::server_error;
}

handshake_outcome refused_by_server(error_code ec, const resp::value& reply)
{
    handshake_outcome out;
    out.ec = ec;
    out.server_message = reply.error_text();
    return out;
}

handshake_outcome out_of_step(std::string what)
{
    handshake_outcome out;
    out.ec = error::protocol_error;
    out.client_message = std::move(what);
    return out;
}

// [kind, channel, count] for this very channel.
bool confirms(const resp::value& reply, pubsub_kind kind, const std::string& channel)
{
    return confirmation_kind(reply) == kind && reply.elements[1].text == channel;
}

}  // namespace

handshake_outcome read_handshake(const handshake_request& sent, const response& replies)
{
    if (replies.size() != sent.commands.expected_replies()) {
        return out_of_step(std::to_string(replies.size()) + " replies to a handshake of " +
                           std::to_string(sent.commands.expected_replies()) + " commands");
    }
    handshake_outcome out;
    std::size_t next = 0;
    if (sent.says_hello) {
        const auto& hello = replies[next++];
        if (hello.is_error()) return refused_by_server(hello_error(hello.error_text()), hello);
        out.server = server_identity_of_hello(hello);
    }
    if (sent.selects_db) {
        if (replies[next].is_error()) return refused_by_server(error::server_error, replies[next]);
        ++next;
    }
    if (sent.tracks_keys) {
        const auto& reply = replies[next++];
        if (reply.is_error())
            out.tracking_refusal = reply.error_text();
        else
            out.tracking = true;
    }
    const auto undo = sent.undo_sharded ? pubsub_kind::sunsubscribe : pubsub_kind::unsubscribe;
    for (const auto& channel : sent.undone) {
        const auto& reply = replies[next++];
        if (!confirms(reply, undo, channel))
            return out_of_step("the unsubscribe of '" + channel + "' was answered by " + to_string(reply));
    }
    const auto kind = sent.sharded ? pubsub_kind::ssubscribe : pubsub_kind::subscribe;
    for (const auto& channel : sent.channels) {
        const auto& reply = replies[next++];
        if (reply.is_error()) {
            out.refused.push_back(channel);
        } else if (confirms(reply, kind, channel)) {
            out.restored.push_back(channel);
        } else {
            return out_of_step("the subscribe of '" + channel + "' was answered by " + to_string(reply));
        }
    }
    return out;
}

}  // namespace redlock::detail
