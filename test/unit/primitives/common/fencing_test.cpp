// The arithmetic of fencing tokens and how the fenced scripts' replies are read, without a server.
#include "primitives/common/fencing.hpp"
#include "primitives/common/token_lease.hpp"
#include "primitives/mutex/plain_scripts.hpp"

#include <redlock/fenced_write.hpp>

#include <boost/test/unit_test.hpp>

#include <common/fakes/resp_values.hpp>

using redlock::error;
using redlock::detail::fence_maximum;
using redlock::detail::parse_fence;
using redlock::detail::vote;
namespace plain = redlock::detail::plain_scripts;
namespace token_lease = redlock::detail::token_lease;
namespace resp = redlock::resp;
using redlock::test::array;
using redlock::test::bulk;
using redlock::test::error_reply;
using redlock::test::integer;

namespace {
redlock::response reply(resp::value v)
{
    return redlock::response{std::move(v)};
}
}  // namespace

BOOST_AUTO_TEST_CASE(counters_parse_as_redis_stores_them)
{
    BOOST_TEST((parse_fence("0") == 0u));
    BOOST_TEST((parse_fence("42") == 42u));
    BOOST_TEST((parse_fence("9223372036854775807") == 9223372036854775807u));
    for (const char* bad : {"", "-1", "+1", "042", "1x", " 1", "9223372036854775808", "18446744073709551616", "x"})
        BOOST_TEST(!parse_fence(bad).has_value(), bad);
}

BOOST_AUTO_TEST_CASE(the_next_token_is_one_above_the_highest_counter)
{
    fence_maximum m;
    BOOST_TEST(m.next() == 1u);  // no counter anywhere yet
    for (std::uint64_t c : {3u, 7u, 0u, 5u}) m.add(c);
    BOOST_TEST(m.highest() == 7u);
    BOOST_TEST(m.next() == 8u);
}

BOOST_AUTO_TEST_CASE(fenced_grants_refusals_and_failures_are_told_apart)
{
    const auto granted = reply(array({integer(1), bulk("17")}));
    BOOST_TEST((plain::read_acquire({}, granted).verdict == vote::yes));
    BOOST_TEST((plain::read_acquire({}, granted).fence == 17u));
    BOOST_TEST((plain::read_acquire({}, reply(integer(-1500))).verdict == vote::no));
    BOOST_TEST(plain::read_acquire({}, reply(integer(-1500))).wait->count() == 1500);
    BOOST_TEST((plain::read_acquire({}, reply(array({integer(1), bulk("x")}))).verdict == vote::error));
    BOOST_TEST((plain::read_acquire({}, reply(array({integer(2), bulk("1")}))).verdict == vote::error));
    BOOST_TEST((plain::read_acquire(make_error_code(error::timeout), granted).verdict == vote::error));
    BOOST_TEST(!plain::read_acquire({}, reply(integer(1))).fence.has_value());  // a plain grant has no counter

    BOOST_TEST((token_lease::classify_commit({}, reply(integer(1))) == vote::yes));
    BOOST_TEST((token_lease::classify_commit({}, reply(integer(0))) == vote::no));   // not ours any more
    BOOST_TEST((token_lease::classify_commit({}, reply(integer(-1))) == vote::no));  // another commit got there first
    BOOST_TEST((token_lease::classify_commit(make_error_code(error::server_error), reply(integer(1))) == vote::error));
}

BOOST_AUTO_TEST_CASE(fenced_write_outcomes)
{
    using redlock::fenced_write;
    auto [ok, at] = fenced_write::outcome(array({integer(1), bulk("12")}));
    BOOST_TEST(!ok);
    BOOST_TEST(at == 12u);
    auto [stale, newer] = fenced_write::outcome(array({integer(0), bulk("30")}));
    BOOST_TEST(stale == error::stale_token);
    BOOST_TEST(newer == 30u);
    auto [failed, none] = fenced_write::outcome(error_reply("ERR WRONGTYPE"));
    BOOST_TEST(failed == error::server_error);
    BOOST_TEST(none == 0u);
    auto [malformed, zero] = fenced_write::outcome(integer(1));
    BOOST_TEST(malformed == error::protocol_error);
    BOOST_TEST(zero == 0u);
}

BOOST_AUTO_TEST_CASE(a_fenced_write_request_carries_the_guard_and_each_command)
{
    redlock::fenced_write w("{r}:guard", 7);
    w.command("SET", "{r}:a", {"1"}).command("DEL", "{r}:b");
    BOOST_TEST(w.invalid().empty());
    const auto req = w.to_request();
    BOOST_TEST(req.commands() == 1u);
    const auto& calls = req.script_calls();
    BOOST_REQUIRE(calls.size() == 1u);
    // numkeys, keys, then: token, SET, 1, "1", DEL, 0
    const std::vector<std::string> expected{"3", "{r}:guard", "{r}:a", "{r}:b", "7", "SET", "1", "1", "DEL", "0"};
    BOOST_TEST(req.script_params(calls[0]) == expected, boost::test_tools::per_element());
}
