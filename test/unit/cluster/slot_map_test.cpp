// The slot map, read from CLUSTER SHARDS and CLUSTER SLOTS replies built by hand.
#include "cluster/slot_map.hpp"

#include <boost/test/unit_test.hpp>

#include <common/fakes/resp_values.hpp>

using namespace redlock::test;
using redlock::detail::master_address;
using redlock::detail::slot_map_source;
namespace resp = redlock::resp;

namespace {

resp::value map_of(std::vector<resp::value> pairs)
{
    return aggregate(resp::type::map, std::move(pairs));
}

resp::value shard_node(std::string ip, std::int64_t port, std::string role, std::string health = "online",
                       std::string endpoint = "")
{
    return map_of({bulk("id"), bulk("0123" + ip), bulk("port"), integer(port), bulk("ip"), bulk(ip), bulk("endpoint"),
                   bulk(endpoint.empty() ? ip : endpoint), bulk("role"), bulk(std::move(role)),
                   bulk("replication-offset"), integer(72156), bulk("health"), bulk(std::move(health))});
}

resp::value shard(std::vector<resp::value> slots, std::vector<resp::value> nodes)
{
    return map_of({bulk("slots"), array(std::move(slots)), bulk("nodes"), array(std::move(nodes))});
}

}  // namespace

BOOST_AUTO_TEST_CASE(cluster_shards_gives_each_slot_its_master)
{
    auto reply = array({
        shard({integer(0), integer(5460)},
              {shard_node("10.0.0.1", 7000, "master"), shard_node("10.0.0.4", 7003, "replica")}),
        shard({integer(5461), integer(10922)},
              {shard_node("10.0.0.5", 7004, "replica"), shard_node("10.0.0.2", 7001, "master")}),
        shard({integer(10923), integer(16000), integer(16001), integer(16383)},
              {shard_node("10.0.0.3", 7002, "master")}),
    });
    std::string why;
    auto map = redlock::detail::read_cluster_shards(reply, slot_map_source{"10.0.0.1"}, why);
    BOOST_TEST_REQUIRE(map.has_value(), why);
    BOOST_TEST(map->masters().size() == 3u);
    BOOST_TEST(map->uncovered_slots() == 0u);
    BOOST_TEST((*map->owner(0) == master_address{"10.0.0.1", 7000}));
    BOOST_TEST((*map->owner(5460) == master_address{"10.0.0.1", 7000}));
    BOOST_TEST((*map->owner(5461) == master_address{"10.0.0.2", 7001}));
    BOOST_TEST((*map->owner(16383) == master_address{"10.0.0.3", 7002}));
    BOOST_TEST(map->owner(12000)->text() == "10.0.0.3:7002");
}

BOOST_AUTO_TEST_CASE(cluster_shards_reads_slot_numbers_sent_as_strings_and_resp2_arrays)
{
    // Redis 7.0.14 sent some slot numbers as strings; a RESP2 reply has flat arrays where RESP3 has maps.
    auto node = array({bulk("port"), integer(7000), bulk("ip"), bulk("10.0.0.1"), bulk("endpoint"), bulk("10.0.0.1"),
                       bulk("role"), bulk("master"), bulk("health"), bulk("online")});
    auto reply = array({array({bulk("slots"), array({bulk("0"), bulk("16383")}), bulk("nodes"), array({node})})});
    std::string why;
    auto map = redlock::detail::read_cluster_shards(reply, slot_map_source{"h"}, why);
    BOOST_TEST_REQUIRE(map.has_value(), why);
    BOOST_TEST(map->uncovered_slots() == 0u);
}

BOOST_AUTO_TEST_CASE(cluster_shards_prefers_an_online_master_and_an_endpoint_and_knows_tls_ports)
{
    auto failed_old = shard_node("10.0.0.1", 7000, "master", "failed");
    auto promoted = shard_node("10.0.0.4", 7003, "master", "online", "redis-4.example");
    auto tls_node = map_of({bulk("port"), integer(7005), bulk("tls-port"), integer(17005), bulk("ip"), bulk("10.0.0.6"),
                            bulk("endpoint"), bulk("?"), bulk("role"), bulk("master")});
    auto reply = array(
        {shard({integer(0), integer(100)}, {failed_old, promoted}), shard({integer(101), integer(200)}, {tls_node})});
    std::string why;
    auto plain = redlock::detail::read_cluster_shards(reply, slot_map_source{"asked"}, why);
    BOOST_TEST_REQUIRE(plain.has_value(), why);
    BOOST_TEST(plain->owner(0)->text() == "redis-4.example:7003");
    BOOST_TEST(plain->owner(150)->text() == "10.0.0.6:7005");  // "?" endpoint: the ip
    BOOST_TEST(plain->owner(201) == nullptr);
    BOOST_TEST(plain->uncovered_slots() == 16384u - 201u);
    auto tls = redlock::detail::read_cluster_shards(reply, slot_map_source{"asked", true}, why);
    BOOST_TEST_REQUIRE(tls.has_value(), why);
    BOOST_TEST(tls->owner(150)->text() == "10.0.0.6:17005");
}

BOOST_AUTO_TEST_CASE(a_node_without_a_known_address_is_the_member_asked)
{
    auto node = map_of(
        {bulk("port"), integer(7000), bulk("ip"), bulk(""), bulk("endpoint"), bulk(""), bulk("role"), bulk("master")});
    std::string why;
    auto map = redlock::detail::read_cluster_shards(array({shard({integer(0), integer(16383)}, {node})}),
                                                    slot_map_source{"::1"}, why);
    BOOST_TEST_REQUIRE(map.has_value(), why);
    BOOST_TEST(map->owner(7)->text() == "[::1]:7000");
}

BOOST_AUTO_TEST_CASE(malformed_cluster_shards_replies_say_why)
{
    std::string why;
    BOOST_TEST(!redlock::detail::read_cluster_shards(error_reply("ERR unknown"), slot_map_source{"h"}, why));
    BOOST_TEST(why.find("not answer an array") != std::string::npos);
    BOOST_TEST(!redlock::detail::read_cluster_shards(array({map_of({bulk("slots"), array({})})}), {"h"}, why));
    BOOST_TEST(why.find("without slots and nodes") != std::string::npos);
    auto replica_only = shard({integer(0), integer(5)}, {shard_node("a", 1, "replica")});
    BOOST_TEST(!redlock::detail::read_cluster_shards(array({replica_only}), {"h"}, why));
    BOOST_TEST(why.find("without a master") != std::string::npos);
    auto bad_range = shard({integer(5), integer(16384)}, {shard_node("a", 1, "master")});
    BOOST_TEST(!redlock::detail::read_cluster_shards(array({bad_range}), {"h"}, why));
    BOOST_TEST(why.find("0..16383") != std::string::npos);
    auto odd = shard({integer(5)}, {shard_node("a", 1, "master")});
    BOOST_TEST(!redlock::detail::read_cluster_shards(array({odd}), {"h"}, why));
    BOOST_TEST(!redlock::detail::read_cluster_shards(array({}), {"h"}, why));
    BOOST_TEST(why.find("no slot") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(cluster_slots_of_redis_6_gives_the_first_node_of_each_range)
{
    auto reply = array({
        array({integer(0), integer(8191), array({bulk("10.0.0.1"), integer(7000), bulk("id1")}),
               array({bulk("10.0.0.4"), integer(7003), bulk("id4")})}),
        array({integer(8192), integer(16383), array({bulk(""), integer(7001), bulk("id2")})}),
    });
    std::string why;
    auto map = redlock::detail::read_cluster_slots(reply, slot_map_source{"10.0.0.9"}, why);
    BOOST_TEST_REQUIRE(map.has_value(), why);
    BOOST_TEST(map->owner(8191)->text() == "10.0.0.1:7000");
    BOOST_TEST(map->owner(8192)->text() == "10.0.0.9:7001");
    BOOST_TEST(!redlock::detail::read_cluster_slots(array({array({integer(0)})}), {"h"}, why));
    BOOST_TEST(why.find("CLUSTER SLOTS entry") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(a_moved_slot_changes_its_owner_and_a_master_without_slots_leaves_the_list)
{
    redlock::detail::slot_map map;
    map.assign(0, 9, {"a", 1});
    map.assign(10, 10, {"b", 2});
    BOOST_TEST(map.masters().size() == 2u);
    map.assign(10, {"a", 1});
    BOOST_TEST(map.masters().size() == 1u);
    BOOST_TEST(map.owner(10)->text() == "a:1");
    map.assign(3, {"c", 3});
    BOOST_TEST(map.owner(3)->text() == "c:3");
    BOOST_TEST(map.owner(4)->text() == "a:1");
}
