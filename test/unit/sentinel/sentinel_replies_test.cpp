// What Sentinels and masters answer a Sentinel node, read from RESP3 (and RESP2) replies as servers send them.
#include "sentinel/sentinel_replies.hpp"

#include <boost/test/unit_test.hpp>

using redlock::server_address;
using redlock::detail::master_answer;
namespace resp = redlock::resp;

namespace {

resp::value text(std::string s, resp::type t = resp::type::bulk_string)
{
    resp::value v;
    v.data_type = t;
    v.text = std::move(s);
    return v;
}

resp::value integer(std::int64_t n)
{
    resp::value v;
    v.data_type = resp::type::integer;
    v.text = std::to_string(n);
    return v;
}

resp::value aggregate(resp::type t, std::vector<resp::value> elements)
{
    resp::value v;
    v.data_type = t;
    v.elements = std::move(elements);
    return v;
}

resp::value error(std::string s)
{
    return text(std::move(s), resp::type::simple_error);
}

resp::value null()
{
    return resp::value{};
}

}  // namespace

BOOST_AUTO_TEST_CASE(the_masters_address_an_unknown_name_and_a_server_that_is_no_sentinel)
{
    auto answer = redlock::detail::read_master_answer(aggregate(resp::type::array, {text("10.0.0.5"), text("6380")}));
    BOOST_TEST((answer.what == master_answer::kind::address));
    BOOST_TEST((answer.address == server_address{"10.0.0.5", 6380}));

    BOOST_TEST((redlock::detail::read_master_answer(null()).what == master_answer::kind::unknown_master));

    // Redis 7 and 6 spell a data node's refusal of SENTINEL differently; both say "unknown command".
    for (const char* refusal : {"ERR unknown command 'SENTINEL', with args beginning with: 'get-master-addr-by-name' ",
                                "ERR unknown command `SENTINEL`, with args beginning with: "}) {
        auto no = redlock::detail::read_master_answer(error(refusal));
        BOOST_TEST((no.what == master_answer::kind::not_a_sentinel));
        BOOST_TEST(no.text == refusal);
    }
    auto denied = redlock::detail::read_master_answer(error("NOPERM this user has no permissions"));
    BOOST_TEST((denied.what == master_answer::kind::refused));

    for (const auto& odd :
         {aggregate(resp::type::array, {text("h")}), aggregate(resp::type::array, {text("h"), text("99999")}),
          aggregate(resp::type::array, {text(""), text("1")}), text("OK", resp::type::simple_string)}) {
        BOOST_TEST((redlock::detail::read_master_answer(odd).what == master_answer::kind::malformed));
    }
}

BOOST_AUTO_TEST_CASE(other_sentinels_are_read_from_maps_and_flat_arrays)
{
    auto resp3 = aggregate(resp::type::array,
                           {aggregate(resp::type::map, {text("name"), text("abc"), text("ip"), text("10.0.0.2"),
                                                        text("port"), text("26379"), text("flags"), text("sentinel")}),
                            aggregate(resp::type::map, {text("ip"), text("::1"), text("port"), integer(26380)}),
                            // no port: skipped
                            aggregate(resp::type::map, {text("ip"), text("10.0.0.9")})});
    auto found = redlock::detail::read_sentinels(resp3);
    BOOST_TEST((found == std::vector<server_address>{{"10.0.0.2", 26379}, {"::1", 26380}}));

    auto resp2 = aggregate(resp::type::array,
                           {aggregate(resp::type::array, {text("ip"), text("10.0.0.3"), text("port"), text("26381")})});
    BOOST_TEST((redlock::detail::read_sentinels(resp2) == std::vector<server_address>{{"10.0.0.3", 26381}}));
    BOOST_TEST(redlock::detail::read_sentinels(error("ERR no such master")).empty());
    BOOST_TEST(redlock::detail::read_sentinels(aggregate(resp::type::array, {})).empty());
}

BOOST_AUTO_TEST_CASE(role_names_the_servers_role)
{
    auto master = aggregate(resp::type::array, {text("master"), integer(3129659), aggregate(resp::type::array, {})});
    BOOST_TEST(redlock::detail::read_role(master) == "master");
    auto replica = aggregate(resp::type::array,
                             {text("slave"), text("127.0.0.1"), integer(9753), text("connected"), integer(3167038)});
    BOOST_TEST(redlock::detail::read_role(replica) == "slave");
    auto sentinel = aggregate(resp::type::array, {text("sentinel"), aggregate(resp::type::array, {text("m")})});
    BOOST_TEST(redlock::detail::read_role(sentinel) == "sentinel");
    BOOST_TEST(redlock::detail::read_role(error("NOPERM")).empty());
    BOOST_TEST(redlock::detail::read_role(aggregate(resp::type::array, {})).empty());
}

BOOST_AUTO_TEST_CASE(a_switch_master_message_gives_the_name_and_both_addresses)
{
    auto change = redlock::detail::read_switch_master("mymaster 127.0.0.1 6379 10.0.0.7 6380");
    BOOST_TEST_REQUIRE(change.has_value());
    BOOST_TEST(change->master == "mymaster");
    BOOST_TEST((change->from == server_address{"127.0.0.1", 6379}));
    BOOST_TEST((change->to == server_address{"10.0.0.7", 6380}));
    auto v6 = redlock::detail::read_switch_master("m ::1 7000 ::1 7001");
    BOOST_TEST_REQUIRE(v6.has_value());
    BOOST_TEST((v6->to == server_address{"::1", 7001}));
    BOOST_TEST(!redlock::detail::read_switch_master("mymaster 127.0.0.1 6379 10.0.0.7").has_value());
    BOOST_TEST(!redlock::detail::read_switch_master("mymaster 127.0.0.1 6379 10.0.0.7 port").has_value());
    BOOST_TEST(!redlock::detail::read_switch_master("").has_value());
}

BOOST_AUTO_TEST_CASE(readonly_loading_and_masterdown_say_the_server_is_no_master_now)
{
    for (const char* refusal :
         {"READONLY You can't write against a read only replica.", "LOADING Redis is loading the dataset in memory",
          "MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'."}) {
        redlock::response resp{error(refusal), integer(0)};  // a script refused, then its WAIT
        BOOST_TEST(redlock::detail::not_master_refusal(resp) == &resp[0], refusal);
    }
    redlock::response other{error("ERR wrong number of arguments"), error("NOSCRIPT No matching script")};
    BOOST_TEST(redlock::detail::not_master_refusal(other) == nullptr);
    redlock::response fine{text("OK", resp::type::simple_string)};
    BOOST_TEST(redlock::detail::not_master_refusal(fine) == nullptr);
}

BOOST_AUTO_TEST_CASE(the_sentinel_that_answered_is_asked_first_and_learnt_ones_come_last)
{
    redlock::detail::sentinel_list list({{"a", 1}, {"b", 2}, {"a", 1}});
    BOOST_TEST((list.in_order() == std::vector<server_address>{{"a", 1}, {"b", 2}}));
    BOOST_TEST((list.learn({{"c", 3}, {"b", 2}}) == std::vector<server_address>{{"c", 3}}));
    BOOST_TEST((list.in_order() == std::vector<server_address>{{"a", 1}, {"b", 2}, {"c", 3}}));
    list.answered({"c", 3});
    BOOST_TEST((list.in_order() == std::vector<server_address>{{"c", 3}, {"a", 1}, {"b", 2}}));
    list.answered({"c", 3});
    BOOST_TEST((list.in_order().front() == server_address{"c", 3}));
    BOOST_TEST(redlock::detail::address_text({"::1", 26379}) == "[::1]:26379");
    BOOST_TEST(redlock::detail::address_text({"h", 1}) == "h:1");
}
