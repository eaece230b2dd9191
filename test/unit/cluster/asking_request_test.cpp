// What an ASK redirect sends: ASKING, then the request's commands, its scripts still scripts.
#include "cluster/asking_request.hpp"

#include <boost/test/unit_test.hpp>

using redlock::request;

BOOST_AUTO_TEST_CASE(asking_comes_first_then_the_same_commands_and_timeout)
{
    request req;
    req.push("SET", "k", "v", "PX", 5000);
    req.push("GET", "k");
    req.set_timeout(std::chrono::milliseconds(250));
    auto asked = redlock::detail::asking_request(req);
    request expected;
    expected.push("ASKING");
    expected.push("SET", "k", "v", "PX", 5000);
    expected.push("GET", "k");
    BOOST_TEST(asked.payload() == expected.payload());
    BOOST_TEST(asked.expected_replies() == 3u);
    BOOST_TEST(asked.timeout().count() == 250);
}

BOOST_AUTO_TEST_CASE(a_script_stays_a_script_with_its_keys_and_arguments)
{
    redlock::script lua("return redis.call('GET', KEYS[1])");
    request req;
    req.push_script(lua, {"lock:{a}", "lock:{a}:fence"}, {"token", 100});
    req.push("PTTL", "lock:{a}");
    auto asked = redlock::detail::asking_request(req);
    BOOST_TEST_REQUIRE(asked.script_calls().size() == 1u);
    const auto& call = asked.script_calls().front();
    BOOST_TEST(call.reply_index == 1u);  // after ASKING's reply
    BOOST_TEST(call.code.sha1() == lua.sha1());
    BOOST_TEST(
        (asked.script_params(call) == std::vector<std::string>{"2", "lock:{a}", "lock:{a}:fence", "token", "100"}));
    request expected;
    expected.push("ASKING");
    expected.push_script(lua, {"lock:{a}", "lock:{a}:fence"}, {"token", 100});
    expected.push("PTTL", "lock:{a}");
    BOOST_TEST(asked.payload() == expected.payload());
}

BOOST_AUTO_TEST_CASE(binary_arguments_survive)
{
    request req;
    const std::string value("a\r\n\0b", 5);
    req.push("SET", "k", value);
    auto asked = redlock::detail::asking_request(req);
    request expected;
    expected.push("ASKING");
    expected.push("SET", "k", value);
    BOOST_TEST(asked.payload() == expected.payload());
}
