// doc/tutorial.md, walked as a user outside the tree does: install the build into a scratch prefix, configure
// example/tutorial (a project of its own: find_package(redlock CONFIG) and redlock::redlock) against it, build it,
// and run the program against a throwaway redis-server; then two copies at once, the second waiting for the first.
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <common/processes/subprocess.hpp>
#include <common/servers/redis_node.hpp>
#include <regex>
#include <string>
#include <vector>

using namespace std::chrono_literals;
using namespace redlock::test;

namespace {

void step(const std::string& what, const std::vector<std::string>& args, std::chrono::milliseconds limit)
{
    const auto result = run_command(args, limit);
    BOOST_TEST_MESSAGE(what << ": exit " << result.exit_code);
    BOOST_REQUIRE_MESSAGE(result.exit_code == 0, what << " failed:\n" << result.out << result.err);
}

long waited_ms(const std::string& output)
{
    std::smatch m;
    BOOST_REQUIRE_MESSAGE(std::regex_search(output, m, std::regex("locked tutorial:report after (\\d+) ms")), output);
    return std::stol(m[1]);
}

}  // namespace

BOOST_AUTO_TEST_CASE(the_tutorial_builds_against_an_installed_redlock_and_takes_a_lock)
{
    const std::string cmake = REDLOCK_CMAKE_COMMAND;
    const std::string work = make_temp_dir("tutorial-");
    const std::string prefix = work + "/prefix", build = work + "/build";

    step("install", {cmake, "--install", REDLOCK_BUILD_DIR, "--prefix", prefix}, 120s);
    std::vector<std::string> configure{cmake,
                                       "-S",
                                       std::string(REDLOCK_SOURCE_DIR) + "/example/tutorial",
                                       "-B",
                                       build,
                                       "-G",
                                       REDLOCK_CMAKE_GENERATOR,
                                       "-DCMAKE_PREFIX_PATH=" + prefix,
                                       "-DCMAKE_CXX_COMPILER=" + std::string(REDLOCK_CXX),
                                       "-DCMAKE_BUILD_TYPE=" + std::string(REDLOCK_BUILD_TYPE)};
    if (!std::string(REDLOCK_MAKE_PROGRAM).empty())
        configure.push_back("-DCMAKE_MAKE_PROGRAM=" + std::string(REDLOCK_MAKE_PROGRAM));
    // A sanitized static library needs the sanitizer runtime at link time (it exports no sanitizer flags).
    if (!std::string(REDLOCK_TEST_SANITIZE).empty())
        configure.push_back("-DCMAKE_EXE_LINKER_FLAGS=-fsanitize=" + std::string(REDLOCK_TEST_SANITIZE));
    step("configure", configure, 120s);
    // The package came from the scratch prefix, not from another installed copy.
    const auto cache = file_contents(build + "/CMakeCache.txt");
    BOOST_TEST(cache.find("redlock_DIR:PATH=" + prefix + "/") != std::string::npos);
    step("build", {cmake, "--build", build}, 600s);

    redis_node node;
    const std::string program = build + "/first_lock";
    const auto once = run_command({program, node.url()}, 30s);
    BOOST_TEST_MESSAGE(once.out << once.err);
    BOOST_TEST(once.exit_code == 0);
    BOOST_TEST(once.out.find("released") != std::string::npos);
    BOOST_TEST(waited_ms(once.out) < 400);
    BOOST_TEST(node.cli({"EXISTS", "tutorial:report"}) == "0");  // released on the node

    // Two at once: the second waits for the first's release (it holds the lock 500 ms).
    const std::string first_log = work + "/first.log", second_log = work + "/second.log";
    const pid_t first = spawn_process({{program, node.url()}, environment_with({}), first_log});
    while (node.cli({"EXISTS", "tutorial:report"}) != "1") {
        int status = 0;
        BOOST_REQUIRE_MESSAGE(!wait_for_exit(first, 10ms, &status), file_contents(first_log));
    }
    const pid_t second = spawn_process({{program, node.url()}, environment_with({}), second_log});
    int first_status = 0, second_status = 0;
    BOOST_REQUIRE(wait_for_exit(first, 30s, &first_status));
    BOOST_REQUIRE(wait_for_exit(second, 30s, &second_status));
    BOOST_TEST(exit_status(first_status) == 0, file_contents(first_log));
    BOOST_TEST(exit_status(second_status) == 0, file_contents(second_log));
    BOOST_TEST(waited_ms(file_contents(second_log)) >= 100);

    // No server: a clear message and exit 1, not a hang.
    const auto refused = run_command({program, "redis://127.0.0.1:" + std::to_string(pick_free_port())}, 30s);
    BOOST_TEST(refused.exit_code == 1);
    BOOST_TEST(refused.err.find("Connection refused") != std::string::npos, refused.err);
}
