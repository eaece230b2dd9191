// Mutual exclusion end to end: 16 concurrent `redlock exec` processes each do a read-modify-write of a counter
// on a separate Redis node (GET, pause, SET: lost updates without the lock), while one lock node is paused and
// another killed mid-run. The count must come out exact.
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <common/processes/subprocess.hpp>
#include <common/run_coro.hpp>
#include <common/servers/redis_node.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <sys/wait.h>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
using namespace redlock::test;
using std::chrono::steady_clock;

namespace {

constexpr int workers = 16;
constexpr int increments_per_worker = 4;

}  // namespace

BOOST_AUTO_TEST_CASE(sixteen_processes_increment_a_counter_exactly_despite_a_paused_and_a_killed_node)
{
    cluster lock_nodes(5);
    redis_node counter;
    counter.cli({"SET", "counter", "0"});
    const std::string redis_cli = cli_program();
    const std::string rc = redis_cli + " -p " + std::to_string(counter.port());

    // The critical section: read, take a moment (so unprotected runs would interleave), write back.
    const std::string body =
        "set -e; v=$(" + rc + " GET counter); sleep 0.005; " + rc + " SET counter $((v + 1)) >/dev/null";
    const std::string worker_script =
        "for i in $(seq " + std::to_string(increments_per_worker) + "); do '" + std::string(REDLOCK_CLI_PATH) +
        "' exec --nodes " + comma_joined(lock_nodes.urls()) + " --key counter-lock --ttl 5s --wait 60s -q -- sh -c '" +
        body + "' || exit $?; done";

    const auto dir = make_temp_dir("redlock-counter-");
    std::vector<pid_t> pids;
    for (int w = 0; w < workers; ++w) {
        pids.push_back(spawn_process({.args = {"/bin/sh", "-c", worker_script},
                                      .env = environment_with({}),
                                      .output_file = dir + "/worker" + std::to_string(w)}));
    }

    // Faults mid-run: a minority of the lock nodes stops answering, then one dies. Three are left: a quorum.
    std::this_thread::sleep_for(800ms);
    lock_nodes[1].pause();
    std::this_thread::sleep_for(800ms);
    lock_nodes[3].kill();

    const auto deadline = steady_clock::now() + 150s;
    for (int w = 0; w < workers; ++w) {
        int status = 0;
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - steady_clock::now());
        const bool exited = wait_for_exit(pids[static_cast<std::size_t>(w)], std::max(left, 1ms), &status);
        if (!exited) stop_process(pids[static_cast<std::size_t>(w)], 1s);
        BOOST_TEST_CONTEXT("worker " << w << " output: " << file_contents(dir + "/worker" + std::to_string(w)))
        {
            BOOST_TEST(exited);
            BOOST_TEST((WIFEXITED(status) && WEXITSTATUS(status) == 0));
        }
    }
    lock_nodes[1].resume();
    BOOST_TEST(counter.cli({"GET", "counter"}) == std::to_string(workers * increments_per_worker));
    std::filesystem::remove_all(dir);
}
