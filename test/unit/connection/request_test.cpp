// Serialization of commands, pipelines and script calls.
#include <redlock/request.hpp>

#include <boost/test/unit_test.hpp>

using redlock::request;

BOOST_AUTO_TEST_CASE(a_command_is_an_array_of_bulk_strings)
{
    request r;
    r.push("SET", "key", "value", "PX", 1500);
    BOOST_TEST(r.payload() == "*5\r\n$3\r\nSET\r\n$3\r\nkey\r\n$5\r\nvalue\r\n$2\r\nPX\r\n$4\r\n1500\r\n");
    BOOST_TEST(r.commands() == 1u);
    BOOST_TEST(r.expected_replies() == 1u);
}

BOOST_AUTO_TEST_CASE(integers_of_every_width_and_sign_are_formatted)
{
    request r;
    r.push("X", std::int64_t{-9223372036854775807 - 1}, std::uint64_t{18446744073709551615u}, short{-3});
    BOOST_TEST(r.payload() ==
               "*4\r\n$1\r\nX\r\n$20\r\n-9223372036854775808\r\n$20\r\n18446744073709551615\r\n$2\r\n-3\r\n");
}

BOOST_AUTO_TEST_CASE(arguments_are_binary_safe)
{
    request r;
    const std::string binary("a\r\n\0b", 5);
    r.push("SET", "k", binary);
    BOOST_TEST(r.payload() == std::string("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$5\r\na\r\n\0b\r\n", 31));
}

BOOST_AUTO_TEST_CASE(a_pipeline_counts_commands_and_expected_replies)
{
    request r;
    r.push("SET", "a", "1");
    r.push("subscribe", "c1", "c2");  // one confirmation push per channel, in any letter case
    r.push_range("DEL", std::vector<std::string>{"a", "b"});
    BOOST_TEST(r.commands() == 3u);
    BOOST_TEST(r.expected_replies() == 4u);
    BOOST_REQUIRE(r.confirmed_commands().size() == 1u);
    BOOST_TEST(r.confirmed_commands()[0].first_reply == 1u);
    BOOST_TEST(r.confirmed_commands()[0].confirmations == 2u);
    BOOST_TEST((r.confirmed_commands()[0].kind == redlock::pubsub_kind::subscribe));
    BOOST_TEST(r.countable());
    r.clear();
    BOOST_TEST(r.empty());
    BOOST_TEST(r.payload().empty());
}

BOOST_AUTO_TEST_CASE(a_script_runs_by_evalsha_and_can_fall_back_to_eval)
{
    redlock::script s("return redis.call('GET', KEYS[1])");
    BOOST_TEST(s.sha1().size() == 40u);
    request r;
    r.push("PING");
    r.push_script(s, {"key"}, {"arg", 7});
    BOOST_TEST(r.payload().find("EVALSHA") != std::string_view::npos);
    BOOST_TEST(r.payload().find(s.sha1()) != std::string_view::npos);
    BOOST_TEST(r.payload().find("redis.call") == std::string_view::npos);
    BOOST_REQUIRE(r.script_calls().size() == 1u);
    BOOST_TEST(r.script_calls()[0].reply_index == 1u);

    auto fallback = r.eval_fallback({&r.script_calls()[0]});
    request expected;
    expected.push("EVAL", s.source(), 1, "key", "arg", 7);
    BOOST_TEST(fallback.payload() == expected.payload());
}

// A request keeps no copy of a script's parameters: they are read back from its payload, where binary bytes (a
// CRLF, a '$') must not end a parameter early.
BOOST_AUTO_TEST_CASE(script_parameters_are_read_back_from_the_payload)
{
    redlock::script first("return 1");
    redlock::script second("return 2");
    const std::string binary("a\r\n$3\r\n\0b", 10);
    request r;
    r.push("SET", "k", "v");
    r.push_script(first, {"key:1", binary}, {"token", 42});
    r.push("PTTL", "k");
    r.push_script(second, std::vector<std::string>{}, std::vector<std::string>{binary, ""});
    BOOST_REQUIRE(r.script_calls().size() == 2u);
    BOOST_TEST(r.script_calls()[0].reply_index == 1u);
    BOOST_TEST(r.script_calls()[1].reply_index == 3u);
    BOOST_TEST((r.script_params(r.script_calls()[0]) == std::vector<std::string>{"2", "key:1", binary, "token", "42"}));
    BOOST_TEST((r.script_params(r.script_calls()[1]) == std::vector<std::string>{"0", binary, ""}));

    auto fallback = r.eval_fallback({&r.script_calls()[1], &r.script_calls()[0]});
    request expected;
    expected.push("EVAL", second.source(), 0, binary, "");
    expected.push("EVAL", first.source(), 2, "key:1", binary, "token", 42);
    BOOST_TEST(fallback.payload() == expected.payload());
    BOOST_TEST(fallback.commands() == 2u);
    BOOST_TEST(fallback.expected_replies() == 2u);
}

// Replica acknowledgement: a WAIT after a script that hit NOSCRIPT acknowledged only the writes before it, so the
// fallback sends it again after the EVAL it follows.
BOOST_AUTO_TEST_CASE(the_eval_fallback_waits_again_after_the_scripts_it_resends)
{
    redlock::script s("return 1");
    request r;
    r.push_script(s, {"key"}, {"arg"});
    r.push("WAIT", 1, 50);
    BOOST_REQUIRE(r.wait_calls().size() == 1u);
    BOOST_TEST(r.wait_calls()[0].reply_index == 1u);
    BOOST_TEST(r.wait_calls()[0].replicas == "1");
    BOOST_TEST(r.wait_calls()[0].timeout == "50");
    auto fallback = r.eval_fallback({&r.script_calls()[0]}, {&r.wait_calls()[0]});
    request expected;
    expected.push("EVAL", s.source(), 1, "key", "arg");
    expected.push("WAIT", 1, 50);
    BOOST_TEST(fallback.payload() == expected.payload());
    BOOST_TEST(fallback.expected_replies() == 2u);
    request plain;
    plain.push("SET", "k", "v");
    BOOST_TEST(plain.wait_calls().empty());
}

BOOST_AUTO_TEST_CASE(script_sha1_matches_what_redis_computes)
{
    // SCRIPT LOAD of this source returns this digest.
    redlock::script s(
        "if redis.call(\"get\",KEYS[1]) == ARGV[1] then return redis.call(\"del\",KEYS[1]) else return 0 end");
    BOOST_TEST(s.sha1() == "b70c2384248f88e6b75b9f89241a180f856ad852");
}

BOOST_AUTO_TEST_CASE(replies_that_cannot_be_counted_make_the_request_unsendable)
{
    request all;
    all.push("UNSUBSCRIBE");  // one push per channel subscribed at the time: unknown here
    BOOST_TEST(!all.countable());
    request in_multi;
    in_multi.push("MULTI");
    in_multi.push("SUBSCRIBE", "c");  // QUEUED, then part of EXEC's reply
    in_multi.push("EXEC");
    BOOST_TEST(!in_multi.countable());
    request after_multi;
    after_multi.push("MULTI");
    after_multi.push("EXEC");
    after_multi.push("SUBSCRIBE", "c");
    BOOST_TEST(after_multi.countable());
    request no_channel;
    no_channel.push("SUBSCRIBE");  // one error: wrong number of arguments
    BOOST_TEST(no_channel.countable());
    BOOST_TEST(no_channel.expected_replies() == 1u);
    BOOST_TEST(!redlock::pubsub_kind_of("SUBSCRIBEX"));
    BOOST_TEST(!redlock::pubsub_kind_of("GET"));
    BOOST_TEST((redlock::pubsub_kind_of("sunsubscribe") == redlock::pubsub_kind::sunsubscribe));
}
