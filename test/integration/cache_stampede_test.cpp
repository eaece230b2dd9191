// A cache stampede across processes: 1,000 concurrent calls for one cold key from four processes run the
// loader once; the others wait for the rebuild lock's release message, read again and get its value.
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <common/redis_node.hpp>
#include <common/subprocess.hpp>
#include <string>
#include <sys/wait.h>
#include <vector>

using namespace std::chrono_literals;
using redlock::test::cluster;

namespace {

// A helper_cache_worker process; stopped on destruction unless it exited.
class cache_worker {
public:
    cache_worker(const std::string& dir, int index, std::vector<std::string> args)
        : output_(dir + "/worker" + std::to_string(index) + ".out")
    {
        args.insert(args.begin(), std::string(REDLOCK_TEST_HELPER_DIR) + "/helper_cache_worker");
        pid_ = redlock::test::spawn_process({std::move(args), redlock::test::environment_with({}), output_});
    }
    ~cache_worker()
    {
        if (!exited_) redlock::test::stop_process(pid_, 2s);
    }
    cache_worker(const cache_worker&) = delete;
    cache_worker& operator=(const cache_worker&) = delete;

    int wait(std::chrono::milliseconds limit)
    {
        exited_ = redlock::test::wait_for_exit(pid_, limit, &status_);
        return exited_ ? redlock::test::exit_status(status_) : -1;
    }
    std::string output() const { return redlock::test::file_contents(output_); }
    long field(const std::string& name) const
    {
        const auto text = output();
        const auto at = text.find(name + "=");
        return at == std::string::npos ? -1 : std::stol(text.substr(at + name.size() + 1));
    }

private:
    std::string output_;
    pid_t pid_ = -1;
    bool exited_ = false;
    int status_ = 0;
};

}  // namespace

BOOST_AUTO_TEST_CASE(a_thousand_concurrent_cold_key_calls_from_four_processes_run_the_loader_once)
{
    // Three lock nodes, the store, and a node that only counts the loader's runs.
    cluster nodes(5);
    const auto lock_urls = nodes[0].url() + "," + nodes[1].url() + "," + nodes[2].url();
    const auto& store = nodes[3];
    const auto& count = nodes[4];
    const auto dir = redlock::test::make_temp_dir("cache_stampede");
    const auto start_at = std::chrono::duration_cast<std::chrono::milliseconds>(
                              (std::chrono::system_clock::now() + 1500ms).time_since_epoch())
                              .count();
    std::vector<std::unique_ptr<cache_worker>> workers;
    for (int i = 0; i < 4; ++i)
        workers.push_back(
            std::make_unique<cache_worker>(dir, i,
                                           std::vector<std::string>{lock_urls, store.url(), count.url(), "product:7",
                                                                    "250", "300", std::to_string(start_at)}));
    long values = 0, loads_here = 0;
    for (auto& w : workers) {
        const int status = w->wait(60s);
        BOOST_TEST(status == 0, "worker: " << status << ": " << w->output());
        values += w->field("values");
        loads_here += w->field("loads_here");
        BOOST_TEST_MESSAGE("worker: " << w->output());
    }
    BOOST_TEST(values == 1000);
    BOOST_TEST(count.cli({"GET", "loads:product:7"}) == "1");
    BOOST_TEST(loads_here == 1);
    BOOST_TEST(store.cli({"GET", "product:7"}).ends_with("\nvalue of product:7"));
}
