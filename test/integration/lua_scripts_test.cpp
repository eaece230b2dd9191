// Every Lua script of the library, as embedded at build time from its .lua file: it loads into a real server
// (SCRIPT LOAD compiles it), under the SHA1 the library sends with EVALSHA; it begins with its contract; and the
// helper functions copied into several scripts are the same everywhere.
#include <redlock/script.hpp>

#include <boost/test/unit_test.hpp>

#include <common/redis_node.hpp>
#include <lua/all.hpp>
#include <string>
#include <string_view>

using redlock::detail::lua::all_scripts;

namespace {

// The functions several scripts carry, each exactly as in its first home: a script reads top to bottom, and a
// fix to one copy must reach them all.
struct shared_function {
    std::string_view home;   // the file whose copy is the reference
    std::string_view begin;  // the copy starts here...
    std::string_view end;    // ...and ends after this
};
const shared_function shared_functions[] = {
    {"src/primitives/common/commit_fence.lua", "local function fence_of(key)", "\nend\n"},
    {"src/primitives/common/commit_fence.lua", "local function less(a, b)", "\nend\n"},
};

std::string_view text_of(std::string_view file)
{
    for (const auto& s : all_scripts)
        if (s.file == file) return s.text;
    return {};
}

std::string_view copy_in(std::string_view text, const shared_function& f)
{
    const auto from = text.find(f.begin);
    if (from == std::string_view::npos) return {};
    const auto to = text.find(f.end, from);
    if (to == std::string_view::npos) return text.substr(from);
    return text.substr(from, to + f.end.size() - from);
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

BOOST_AUTO_TEST_CASE(helper_functions_copied_into_several_scripts_are_the_same)
{
    for (const auto& f : shared_functions) {
        const auto reference = copy_in(text_of(f.home), f);
        BOOST_TEST_REQUIRE(!reference.empty(), f.home << " has no " << f.begin);
        int copies = 0;
        for (const auto& s : all_scripts) {
            const auto copy = copy_in(s.text, f);
            if (copy.empty()) continue;
            ++copies;
            BOOST_TEST(copy == reference, s.file << ": its " << f.begin << " differs from " << f.home << "'s");
        }
        BOOST_TEST(copies >= 2);
    }
}
