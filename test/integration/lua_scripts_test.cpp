// Every Lua script of the library, as embedded at build time from its .lua file (its libraries included): it loads
// into a real server (SCRIPT LOAD compiles it) under the SHA1 the library sends with EVALSHA, it begins with its
// contract, it is handed keys and channels of one slot, and it publishes with SPUBLISH (PUBLISH where the server has
// none; nothing where the ACL forbids it, without failing).
#include "common/key_slot.hpp"

#include <redlock/bloom_filter.hpp>
#include <redlock/fenced_write.hpp>
#include <redlock/key_layout.hpp>
#include <redlock/script.hpp>

#include <boost/test/unit_test.hpp>

#include <common/models/every_script.hpp>
#include <common/servers/raw_client.hpp>
#include <common/servers/redis_node.hpp>
#include <lua/all.hpp>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <vector>

using redlock::detail::lua::all_scripts;
using namespace std::chrono_literals;
namespace detail = redlock::detail;

namespace {

// The commands of a request, each a list of its arguments (a request serializes to RESP arrays of bulk strings).
std::vector<std::vector<std::string>> commands_of(const redlock::request& req)
{
    std::vector<std::vector<std::string>> out;
    std::string_view rest = req.payload();
    const auto number = [&](char mark) {
        BOOST_REQUIRE(!rest.empty() && rest.front() == mark);
        const auto end = rest.find("\r\n");
        const auto n = std::stoul(std::string(rest.substr(1, end - 1)));
        rest.remove_prefix(end + 2);
        return n;
    };
    while (!rest.empty()) {
        auto& command = out.emplace_back();
        for (auto parts = number('*'); parts > 0; --parts) {
            const auto size = number('$');
            command.emplace_back(rest.substr(0, size));
            rest.remove_prefix(size + 2);
        }
    }
    return out;
}

// Every script call of `req` hands keys of one hash slot, and release channels (which a script publishes on: a
// Cluster refuses a channel outside the script's slot) of that slot too, or says why not.
std::string keys_outside_one_slot(const redlock::request& req)
{
    for (const auto& command : commands_of(req)) {
        if (command.empty() || (command[0] != "EVALSHA" && command[0] != "EVAL")) continue;
        const auto keys = std::stoul(command.at(2));
        for (std::size_t k = 1; k < keys; ++k)
            if (detail::key_slot(command.at(3 + k)) != detail::key_slot(command.at(3)))
                return command.at(3 + k) + " is not in the slot of " + command.at(3);
        for (std::size_t a = 3 + keys; a < command.size(); ++a)
            if (command[a].ends_with(":released") && detail::key_slot(command[a]) != detail::key_slot(command.at(3)))
                return "channel " + command[a] + " is not in the slot of " + command.at(3);
    }
    return {};
}

// A RESP3 subscriber on its own socket: HELLO 3, then one subscribe command of `kind` ("SSUBSCRIBE", "SUBSCRIBE").
std::unique_ptr<redlock::test::raw_client> subscriber(const redlock::test::redis_node& node, const std::string& kind,
                                                      const std::string& channel)
{
    auto client = std::make_unique<redlock::test::raw_client>(node.port());
    boost::system::error_code ec;
    client->write("HELLO 3\r\n");
    client->read_until("proto", std::chrono::seconds(2), ec);
    BOOST_REQUIRE(!ec);
    client->write(kind + " " + channel + "\r\n");
    client->read_until(channel + "\r\n:1\r\n", std::chrono::seconds(2), ec);  // [ssubscribe, channel, 1]
    BOOST_REQUIRE(!ec);
    return client;
}

// Runs the mutex's release script on `node` for a lock `key` held by "tok" (as the library sends it, by EVAL):
// what it returns.
std::string release_by_script(const redlock::test::redis_node& node, const std::string& key,
                              std::vector<std::string> auth = {})
{
    node.cli({"SET", key, "tok"});
    std::vector<std::string> args = std::move(auth);
    args.insert(args.end(), {"EVAL", std::string(detail::lua::mutex_release), "1", key, "tok", "release-1",
                             redlock::release_channel(key)});
    return node.cli(args);
}

}  // namespace

BOOST_AUTO_TEST_CASE(every_script_loads_under_the_sha1_the_library_sends)
{
    BOOST_TEST(!all_scripts.empty());
    redlock::test::redis_node node;
    for (const auto& s : all_scripts) {
        BOOST_TEST_CONTEXT(s.file)
        {
            const redlock::script compiled{std::string(s.text)};
            BOOST_TEST(node.cli({"SCRIPT", "LOAD", std::string(s.text)}) == compiled.sha1());
        }
    }
}

BOOST_AUTO_TEST_CASE(every_script_begins_with_its_contract)
{
    for (const auto& s : all_scripts) {
        BOOST_TEST_CONTEXT(s.file)
        {
            // The comment block before the first line of code: what it does, KEYS, ARGV and its replies.
            std::string_view head = s.text;
            std::size_t end = 0;
            while (end < head.size() && head.compare(end, 2, "--") == 0) end = head.find('\n', end) + 1;
            head = head.substr(0, end);
            BOOST_TEST(!head.empty());
            BOOST_TEST(head.find("KEYS") != std::string_view::npos);
            BOOST_TEST(
                (head.find("Returns") != std::string_view::npos || head.find("returns") != std::string_view::npos));
        }
    }
}

// A Redis Cluster runs a script only when its keys share one hash slot, and so does the library's own Cluster node:
// every request the primitives build hands a script the keys of one slot, whatever the name (with or without a hash
// tag). Not for a name that contains '}' outside a hash tag ("a}b", "x{}y"): no key can be in its slot and carry a
// suffix, and key_layout.hpp says to avoid such names on a Cluster. The watchdog's batched extension is the one
// exception by design: it spans leases, and is sent only to nodes that run requests across slots
// (node::cross_slot_requests).
BOOST_AUTO_TEST_CASE(every_script_is_handed_keys_of_one_slot)
{
    for (const std::string name : {"job", "app:report", "{orders}:42", "a{b}c", "x{y"}) {
        BOOST_TEST_CONTEXT(name)
        {
            const auto built = redlock::test::every_script_request(name);
            for (std::size_t i = 0; i < built.size(); ++i)
                BOOST_TEST(keys_outside_one_slot(built[i]).empty(),
                           "request " << i << ": " << keys_outside_one_slot(built[i]));
        }
    }
    // The resource side's keys are the user's: a guard and keys that share a hash tag share a slot.
    redlock::fenced_write write("{account:42}:fence", 9);
    write.command("SET", "{account:42}:balance", {"10"});
    BOOST_TEST(keys_outside_one_slot(write.to_request()).empty());
    // And the check can fail: keys without a common tag are in different slots.
    redlock::fenced_write apart("guard", 9);
    apart.command("SET", "balance", {"10"});
    BOOST_TEST(!keys_outside_one_slot(apart.to_request()).empty());
}

// The requests above (and those the Cluster tests run) reach every script the library embeds, but the watchdog's
// batched extensions, which span slots by design: a new script must join every_script_request to be checked.
BOOST_AUTO_TEST_CASE(every_script_request_calls_every_embedded_script)
{
    std::set<std::string> called;
    for (const auto& req : redlock::test::every_script_request("job"))
        for (auto& sha1 : redlock::test::scripts_called(req)) called.insert(std::move(sha1));
    for (const auto& s : all_scripts) {
        if (s.file.ends_with("/extend_many.lua")) continue;
        BOOST_TEST(called.contains(redlock::script{std::string(s.text)}.sha1()), s.file << " is never called");
    }
}

// Redis 7: a release publishes with SPUBLISH, which reaches a sharded subscriber (SSUBSCRIBE), as the library's
// connections subscribe there; a Cluster delivers it within the channel's shard.
BOOST_AUTO_TEST_CASE(a_release_publishes_on_the_sharded_channel)
{
    redlock::test::redis_node node;
    auto sharded = subscriber(node, "SSUBSCRIBE", "{job}:released");
    BOOST_TEST(release_by_script(node, "job") == "1");
    boost::system::error_code ec;
    const auto message = sharded->read_until("release-1\r\n", std::chrono::seconds(2), ec);
    BOOST_TEST(!ec);
    BOOST_TEST(message.find("smessage") != std::string::npos);
    BOOST_TEST(node.command_stat("spublish") == 1);
    BOOST_TEST(node.command_stat("publish") == 0);
}

// A server without SPUBLISH (Redis 6.x; here a 7.x with the command renamed away): the script falls back to PUBLISH,
// which a classic subscriber receives.
BOOST_AUTO_TEST_CASE(without_spublish_a_release_publishes_on_the_classic_channel)
{
    redlock::test::node_options options;
    options.extra_args = {"--rename-command", "SPUBLISH", ""};
    redlock::test::redis_node node(options);
    BOOST_REQUIRE(node.cli({"SPUBLISH", "c", "m"}).find("unknown command") != std::string::npos);
    auto classic = subscriber(node, "SUBSCRIBE", "{job}:released");
    BOOST_TEST(release_by_script(node, "job") == "1");
    boost::system::error_code ec;
    const auto message = classic->read_until("release-1\r\n", std::chrono::seconds(2), ec);
    BOOST_TEST(!ec);
    BOOST_TEST(message.find("message") != std::string::npos);
    BOOST_TEST(node.command_stat("publish") == 1);
}

// An ACL user without channel rights (or without SPUBLISH) still releases: the publish is skipped, not fallen back
// from (PUBLISH would be refused the same way), and the script does not fail.
BOOST_AUTO_TEST_CASE(a_release_the_acl_forbids_to_publish_still_deletes_the_key)
{
    redlock::test::redis_node node;
    node.cli({"ACL", "SETUSER", "nochannels", "on", ">pw", "~*", "resetchannels", "+@all"});
    node.cli({"ACL", "SETUSER", "nospublish", "on", ">pw", "~*", "&*", "+@all", "-spublish"});
    for (const std::string user : {"nochannels", "nospublish"}) {
        BOOST_TEST_CONTEXT(user)
        {
            BOOST_TEST(release_by_script(node, "job", {"--user", user, "--pass", "pw", "--no-auth-warning"}) == "1");
            BOOST_TEST(node.cli({"EXISTS", "job"}) == "0");
        }
    }
    BOOST_TEST(node.command_stat("publish") == 0);
    BOOST_TEST(node.command_stat("spublish", "rejected_calls") == 2);
}
