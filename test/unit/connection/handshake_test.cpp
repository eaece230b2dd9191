// The handshake without a server: what one connection attempt sends in its one write (HELLO 3 with AUTH and
// SETNAME, SELECT, CLIENT TRACKING, a SUBSCRIBE per channel to restore), and what its replies mean, each read as the
// reply of its own command and never of another.
#include "connection/handshake.hpp"
#include "resp/reader.hpp"

#include <boost/test/unit_test.hpp>

#include <common/fakes/resp_values.hpp>
#include <string>
#include <vector>

using redlock::error;
using redlock::error_code;
using redlock::node_config;
using redlock::response;
using redlock::detail::handshake_request;
using redlock::detail::make_handshake;
using redlock::detail::read_handshake;
namespace resp = redlock::resp;
using redlock::test::aggregate;
using redlock::test::bulk;
using redlock::test::error_reply;
using redlock::test::integer;

namespace {

using commands = std::vector<std::vector<std::string>>;

// What the server reads from the handshake's one write.
commands sent_commands(const handshake_request& h)
{
    resp::reader reader;
    const auto payload = h.commands.payload();
    auto space = reader.prepare(payload.size());
    std::copy(payload.begin(), payload.end(), space.begin());
    reader.commit(payload.size());
    commands out;
    error_code ec;
    while (auto v = reader.next(ec)) {
        std::vector<std::string> cmd;
        for (const auto& e : v->elements) cmd.push_back(e.text);
        out.push_back(std::move(cmd));
    }
    BOOST_TEST(!ec);
    return out;
}

resp::value hello_reply(std::string version = "7.0.15")
{
    return aggregate(resp::type::map, {bulk("server"), bulk("redis"), bulk("version"), bulk(std::move(version)),
                                       bulk("proto"), integer(3)});
}

resp::value confirmation(std::string kind, std::string channel, int count = 1)
{
    return aggregate(resp::type::push, {bulk(std::move(kind)), bulk(std::move(channel)), integer(count)});
}

resp::value ok()
{
    return redlock::test::scalar(resp::type::simple_string, "OK");
}

// Most cases leave client tracking out, to read the other commands alone.
node_config untracked()
{
    node_config config;
    config.track_keys = false;
    return config;
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_plain_node_gets_hello_3_alone)
{
    const auto h = make_handshake(untracked(), {});
    BOOST_TEST((sent_commands(h) == commands{{"HELLO", "3"}}));
    BOOST_TEST(h.commands.expected_replies() == 1u);
}

BOOST_AUTO_TEST_CASE(credentials_name_db_and_channels_go_in_one_request_in_order)
{
    node_config config = untracked();
    config.username = "app";
    config.password = "s3cret";
    config.client_name = "worker-1";
    config.db = 2;
    const auto h = make_handshake(config, {"lock:a", "lock:b"});
    BOOST_TEST((sent_commands(h) == commands{{"HELLO", "3", "AUTH", "app", "s3cret", "SETNAME", "worker-1"},
                                             {"SELECT", "2"},
                                             {"SUBSCRIBE", "lock:a"},
                                             {"SUBSCRIBE", "lock:b"}}));
    BOOST_TEST(h.commands.expected_replies() == 4u);  // one round trip answers everything
}

BOOST_AUTO_TEST_CASE(client_tracking_follows_select_and_precedes_the_restores)
{
    node_config config;
    config.db = 3;
    const auto h = make_handshake(config, {"a"});
    BOOST_TEST((sent_commands(h) ==
                commands{{"HELLO", "3"}, {"SELECT", "3"}, {"CLIENT", "TRACKING", "on", "NOLOOP"}, {"SUBSCRIBE", "a"}}));
    const auto outcome = read_handshake(h, response{hello_reply(), ok(), ok(), confirmation("subscribe", "a")});
    BOOST_TEST(!outcome.ec);
    BOOST_TEST(outcome.tracking);
    BOOST_TEST(outcome.tracking_refusal.empty());
    BOOST_TEST((outcome.restored == std::vector<std::string>{"a"}));
}

// An ACL user without `client|tracking`, or a proxy without the command: the connection stands, untracked.
BOOST_AUTO_TEST_CASE(a_refused_client_tracking_leaves_the_session_untracked_and_connected)
{
    const auto h = make_handshake(node_config{}, {"a"});
    const std::string refusal = "NOPERM this user has no permissions to run the 'client|tracking' command";
    const auto outcome =
        read_handshake(h, response{hello_reply(), error_reply(refusal), confirmation("subscribe", "a")});
    BOOST_TEST(!outcome.ec);
    BOOST_TEST(!outcome.tracking);
    BOOST_TEST(outcome.tracking_refusal == refusal);
    BOOST_TEST((outcome.restored == std::vector<std::string>{"a"}));
}

BOOST_AUTO_TEST_CASE(a_node_without_track_keys_asks_for_no_tracking)
{
    const auto h = make_handshake(untracked(), {});
    BOOST_TEST((sent_commands(h) == commands{{"HELLO", "3"}}));
    BOOST_TEST(!read_handshake(h, response{hello_reply()}).tracking);
}

BOOST_AUTO_TEST_CASE(a_password_without_a_user_authenticates_the_default_user)
{
    node_config config = untracked();
    config.password = "pw";
    BOOST_TEST((sent_commands(make_handshake(config, {})) == commands{{"HELLO", "3", "AUTH", "default", "pw"}}));
}

BOOST_AUTO_TEST_CASE(a_successful_handshake_reports_the_version_and_the_restored_channels)
{
    node_config config = untracked();
    config.db = 1;
    const auto h = make_handshake(config, {"a", "b"});
    const auto outcome = read_handshake(
        h, response{hello_reply("7.2.4"), ok(), confirmation("subscribe", "a", 1), confirmation("subscribe", "b", 2)});
    BOOST_TEST(!outcome.ec);
    BOOST_TEST((outcome.server == redlock::server_identity{redlock::server_kind::redis, 70204}));
    BOOST_TEST((outcome.restored == std::vector<std::string>{"a", "b"}));
    BOOST_TEST(outcome.refused.empty());
    BOOST_TEST(outcome.server_message.empty());
}

BOOST_AUTO_TEST_CASE(hello_errors_are_classified_and_keep_the_servers_text)
{
    struct expectation {
        std::string reply;
        error code;
    };
    const std::vector<expectation> cases{
        {"WRONGPASS invalid username-password pair or user is disabled.", error::auth_failed},
        {"NOAUTH HELLO must be called with the client already authenticated", error::auth_failed},
        {"NOPERM this user has no permissions to run the 'hello' command", error::auth_failed},
        {"NOPROTO unsupported protocol version", error::unsupported_server},
        {"ERR unknown command 'HELLO', with args beginning with: '3'", error::unsupported_server},
        {"ERR something else", error::server_error},
    };
    for (const auto& c : cases) {
        BOOST_TEST_CONTEXT(c.reply)
        {
            // The SUBSCRIBE after a failed HELLO is answered too (unauthenticated): its reply says nothing.
            const auto h = make_handshake(untracked(), {"a"});
            const auto outcome = read_handshake(h, response{error_reply(c.reply), error_reply("NOAUTH no")});
            BOOST_TEST(outcome.ec == c.code);
            BOOST_TEST(outcome.server_message == c.reply);
            BOOST_TEST(outcome.restored.empty());
            BOOST_TEST(outcome.refused.empty());  // the channel is not dropped for it
        }
    }
}

BOOST_AUTO_TEST_CASE(a_refused_select_fails_the_handshake_and_restores_nothing)
{
    node_config config = untracked();
    config.db = 99;
    const auto h = make_handshake(config, {"a"});
    const auto outcome = read_handshake(
        h, response{hello_reply(), error_reply("ERR DB index is out of range"), confirmation("subscribe", "a")});
    BOOST_TEST(outcome.ec == error::server_error);
    BOOST_TEST(outcome.server_message == "ERR DB index is out of range");
    BOOST_TEST(outcome.restored.empty());
    BOOST_TEST(outcome.refused.empty());
}

BOOST_AUTO_TEST_CASE(a_refused_subscribe_drops_that_channel_alone_and_the_connection_stands)
{
    const auto h = make_handshake(untracked(), {"a", "secret", "c"});
    const auto outcome =
        read_handshake(h, response{hello_reply(), confirmation("subscribe", "a", 1),
                                   error_reply("NOPERM this user has no permissions to access the 'secret' channel"),
                                   confirmation("subscribe", "c", 2)});
    BOOST_TEST(!outcome.ec);
    BOOST_TEST((outcome.restored == std::vector<std::string>{"a", "c"}));
    BOOST_TEST((outcome.refused == std::vector<std::string>{"secret"}));
}

BOOST_AUTO_TEST_CASE(a_reply_that_is_not_its_own_subscribes_confirmation_is_a_protocol_error)
{
    const auto h = make_handshake(untracked(), {"a", "b"});
    const std::vector<response> wrong{
        {hello_reply(), confirmation("subscribe", "b"), confirmation("subscribe", "a")},  // another channel's
        {hello_reply(), confirmation("unsubscribe", "a"), confirmation("subscribe", "b")},
        {hello_reply(), confirmation("psubscribe", "a"), confirmation("subscribe", "b")},
        {hello_reply(), ok(), confirmation("subscribe", "b")},  // an ordinary reply where a confirmation is due
    };
    for (const auto& replies : wrong) {
        const auto outcome = read_handshake(h, replies);
        BOOST_TEST(outcome.ec == error::protocol_error);
        BOOST_TEST(!outcome.client_message.empty());
        BOOST_TEST(outcome.restored.empty());
        BOOST_TEST(outcome.refused.empty());
    }
}

BOOST_AUTO_TEST_CASE(too_few_or_too_many_replies_are_a_protocol_error)
{
    const auto h = make_handshake(untracked(), {"a"});
    BOOST_TEST(read_handshake(h, response{hello_reply()}).ec == error::protocol_error);
    BOOST_TEST(read_handshake(h, response{hello_reply(), confirmation("subscribe", "a"), ok()}).ec ==
               error::protocol_error);
}

BOOST_AUTO_TEST_CASE(a_hello_reply_without_a_version_reads_as_version_0)
{
    const auto h = make_handshake(untracked(), {});
    const auto outcome = read_handshake(h, response{aggregate(resp::type::map, {bulk("server"), bulk("redis")})});
    BOOST_TEST(!outcome.ec);
    BOOST_TEST((outcome.server.kind == redlock::server_kind::redis));
    BOOST_TEST(outcome.server.version == 0u);
    BOOST_TEST(!outcome.server.has_sharded_pubsub());
}

// Valkey 8's HELLO names it and gives its own version (its INFO says redis_version:7.2.4): sharded pub/sub.
BOOST_AUTO_TEST_CASE(a_valkey_hello_reads_as_valkey_with_its_own_version)
{
    const auto h = make_handshake(untracked(), {});
    const auto outcome = read_handshake(
        h, response{aggregate(resp::type::map, {bulk("server"), bulk("valkey"), bulk("version"), bulk("8.0.1")})});
    BOOST_TEST(!outcome.ec);
    BOOST_TEST((outcome.server == redlock::server_identity{redlock::server_kind::valkey, 80001}));
    BOOST_TEST(outcome.server.has_sharded_pubsub());
}

// After a Redis 7 session the restores are sharded (SSUBSCRIBE, answered by `ssubscribe`); a classic confirmation
// does not answer them.
BOOST_AUTO_TEST_CASE(restores_after_a_redis_7_session_are_sharded)
{
    const auto h = make_handshake(untracked(), {"a", "b"}, true);
    BOOST_TEST((sent_commands(h) == commands{{"HELLO", "3"}, {"SSUBSCRIBE", "a"}, {"SSUBSCRIBE", "b"}}));
    const auto outcome =
        read_handshake(h, response{hello_reply(), confirmation("ssubscribe", "a", 1),
                                   error_reply("MOVED 3300 127.0.0.1:7001")});  // a Cluster slot moved meanwhile
    BOOST_TEST(!outcome.ec);
    BOOST_TEST((outcome.restored == std::vector<std::string>{"a"}));
    BOOST_TEST((outcome.refused == std::vector<std::string>{"b"}));
    BOOST_TEST(read_handshake(
                   h, response{hello_reply(), confirmation("subscribe", "a", 1), confirmation("ssubscribe", "b", 2)})
                   .ec == error::protocol_error);
}

// A server whose version changed across the reconnect: the resubscription undoes what the guessed command
// subscribed and subscribes each channel with the server's own.
BOOST_AUTO_TEST_CASE(a_resubscription_undoes_the_guess_and_subscribes_with_the_servers_command)
{
    const auto h = redlock::detail::make_resubscribe({"a"}, false, {"a", "b"}, true);
    BOOST_TEST((sent_commands(h) == commands{{"UNSUBSCRIBE", "a"}, {"SSUBSCRIBE", "a"}, {"SSUBSCRIBE", "b"}}));
    const auto outcome =
        read_handshake(h, response{confirmation("unsubscribe", "a", 0), confirmation("ssubscribe", "a", 1),
                                   error_reply("NOPERM no rights to channel b")});
    BOOST_TEST(!outcome.ec);
    BOOST_TEST(!outcome.server.known());  // no HELLO in it
    BOOST_TEST((outcome.restored == std::vector<std::string>{"a"}));
    BOOST_TEST((outcome.refused == std::vector<std::string>{"b"}));
    // Nothing to undo (a 6.x refused every SSUBSCRIBE): subscribes alone.
    const auto classic = redlock::detail::make_resubscribe({}, true, {"a"}, false);
    BOOST_TEST((sent_commands(classic) == commands{{"SUBSCRIBE", "a"}}));
    BOOST_TEST(read_handshake(classic, response{confirmation("ssubscribe", "a", 1)}).ec == error::protocol_error);
}
