// Every Lua script of the library, as embedded at build time from its .lua file (its libraries included): it loads
// into a real server (SCRIPT LOAD compiles it) under the SHA1 the library sends with EVALSHA, and it begins with
// its contract.
#include <redlock/script.hpp>

#include <boost/test/unit_test.hpp>

#include <common/redis_node.hpp>
#include <lua/all.hpp>
#include <string>
#include <string_view>

using redlock::detail::lua::all_scripts;

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
