// The cache guard across processes when the process that loads a key stalls or dies under the rebuild lock:
// the other processes take over once the lock's TTL runs out (they wait for its release message or its TTL,
// never for their whole wait). A stalled loader that wakes up later either still has I/O to do, and its
// watchdog, which wakes up with it, reports the lease lost first: its callers get error::lost and nothing is
// written; or it has its result in hand, and the guard writes it under the lapsed lease: the store refuses that
// write by the fencing token and its callers get the newer value.
//
// Each process is a helper_cache_worker (test/helpers/cache_worker.cpp); a whole process is stopped or killed,
// watchdog included, which an in-process client (frozen_process) cannot show: it never resumes.
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <common/processes/helper_process.hpp>
#include <common/processes/subprocess.hpp>
#include <common/servers/redis_node.hpp>
#include <csignal>
#include <memory>
#include <string>
#include <vector>

using namespace std::chrono_literals;
using redlock::test::cluster;
using redlock::test::helper_process;
using ms = std::chrono::milliseconds;

namespace {

constexpr ms lock_ttl = 2400ms;  // the watchdog's first extension is due 800 ms after the grant
constexpr ms load_time = 500ms;  // the loader's wait ends well before that: see the stall tests
// A waiter sleeps until the holder's key expires, then takes the lock, reads, loads and writes: one TTL and
// one load, and room for a loaded machine (processes starting, four lock round trips, a release message).
constexpr ms takeover_bound = lock_ttl + load_time + 1000ms;

// Three lock nodes, the store, and a node where the loaders count themselves.
struct cache_processes {
    cluster nodes{5};
    std::string dir = redlock::test::make_temp_dir("cache_guard_fault");
    std::string key = "product:42";

    std::string lock_urls() const { return nodes[0].url() + "," + nodes[1].url() + "," + nodes[2].url(); }
    redlock::test::redis_node& store() { return nodes[3]; }
    redlock::test::redis_node& count() { return nodes[4]; }

    // A worker whose loader returns "value of KEY from `tag`" and says when it starts.
    std::unique_ptr<helper_process> worker(const std::string& tag, int calls, std::vector<std::string> options = {})
    {
        std::vector<std::string> args{lock_urls(),
                                      store().url(),
                                      count().url(),
                                      key,
                                      std::to_string(calls),
                                      std::to_string(load_time.count()),
                                      redlock::test::unix_ms_in(0ms),
                                      "lock_ttl_ms=" + std::to_string(lock_ttl.count()),
                                      "tag=" + tag,
                                      "announce_load"};
        args.insert(args.end(), options.begin(), options.end());
        return std::make_unique<helper_process>("cache_worker", dir, tag, std::move(args));
    }
    // A worker that takes the lock and starts loading, then gets `signal_number` while its loader waits.
    std::unique_ptr<helper_process> stuck_loader(int signal_number, std::vector<std::string> options = {})
    {
        auto a = worker("a", 3, std::move(options));
        BOOST_TEST_REQUIRE(a->wait_for_output("loader started", 15s), a->output());
        a->signal(signal_number);
        // It holds the lock: granted at a quorum of two, so one node's SET may not have landed yet.
        int holding = 0;
        for (std::size_t n = 0; n < 3; ++n) holding += nodes[n].cli({"EXISTS", "{" + key + "}:rebuild"}) == "1" ? 1 : 0;
        BOOST_TEST(holding >= 2);
        return a;
    }
    long loads() { return std::stol(count().cli({"GET", "loads:" + key})); }
    // Script calls on the store: the guard's fenced writes (EVALSHA, and EVAL after a NOSCRIPT).
    long store_scripts() { return store().command_stat("evalsha") + store().command_stat("eval"); }
};

// Two processes that miss the key while the first one's load is stuck: both end with the one value the winner of
// the lock loaded, within about a lock TTL and a load. Returns the winner's tag.
std::string others_take_over(cache_processes& p)
{
    auto b = p.worker("b", 5);
    auto c = p.worker("c", 5);
    for (auto* w : {b.get(), c.get()}) {
        const int status = w->wait(20s);
        BOOST_TEST_MESSAGE("worker: " << w->output());
        BOOST_TEST(status == 0, "status " << status << ": " << w->output());  // every call got a value: no error
        BOOST_TEST(w->field("values") == 5);
        BOOST_TEST(w->field("other_values") == 0);
        BOOST_TEST(w->field("max_call_ms") < takeover_bound.count(), w->output());
    }
    const auto winner = b->word("value_from");
    BOOST_TEST((winner == "b" || winner == "c"), winner);
    BOOST_TEST(c->word("value_from") == winner);  // the second one read the first one's value: no second load
    BOOST_TEST(b->field("loads_here") + c->field("loads_here") == 1);
    // The stuck load's token was 1: the new holder's is 2, and that is what the store holds.
    const auto stored = p.store().cli({"GET", p.key});
    BOOST_TEST(stored.starts_with("rlc1 v 2 "), stored);
    BOOST_TEST(stored.ends_with("\nvalue of " + p.key + " from " + winner), stored);
    BOOST_TEST(p.loads() == 2);  // the stuck one's, then the winner's
    return winner;
}

}  // namespace

// The loading process is stopped (SIGSTOP: a GC pause, a stopped VM) for longer than the rebuild lock's TTL, while
// its loader waits. On SIGCONT the loader's wait has expired before the watchdog's first extension was due, and
// the loader returns at once: the guard writes under its lapsed lease, the store refuses that write by the fencing
// token, and the stalled process's callers get the newer value, not an error and not their own.
BOOST_AUTO_TEST_CASE(a_loader_stopped_past_the_lock_ttl_is_taken_over_and_its_late_write_refused)
{
    cache_processes p;
    auto a = p.stuck_loader(SIGSTOP, {"no_io_after_wait"});
    const auto stopped_at = std::chrono::steady_clock::now();
    const auto winner = others_take_over(p);

    BOOST_TEST((std::chrono::steady_clock::now() - stopped_at > lock_ttl));  // a was stopped past its lease
    const auto newer = p.store().cli({"GET", p.key});
    const auto scripts_before = p.store_scripts();
    a->signal(SIGCONT);
    const int status = a->wait(10s);
    BOOST_TEST_MESSAGE("worker: " << a->output());
    BOOST_TEST(status == 0, "status " << status << ": " << a->output());
    BOOST_TEST(a->field("values") == 3);
    BOOST_TEST(a->word("value_from") == winner);  // the newer value, not its own ("a")
    BOOST_TEST(a->field("other_values") == 0);
    BOOST_TEST(a->field("loads_here") == 1);
    BOOST_TEST(p.store_scripts() - scripts_before == 1);  // it did try its write...
    BOOST_TEST(p.store().cli({"GET", p.key}) == newer);   // ...and the store refused it
    BOOST_TEST(p.loads() == 2);
}

// The same stall, but the loader still has a round trip to make when the process resumes (its DECR of
// `loading:KEY`). The watchdog, due in the same instant, finds the lease's validity over and declares it lost
// before that reply can arrive: the loader is cancelled, nothing is written, and the stalled process's callers get
// error::lost (as cache.md documents), although a newer value is in the store by then.
BOOST_AUTO_TEST_CASE(a_loader_stopped_past_the_lock_ttl_with_io_left_fails_its_callers_with_lost)
{
    cache_processes p;
    auto a = p.stuck_loader(SIGSTOP);
    others_take_over(p);

    const auto newer = p.store().cli({"GET", p.key});
    const auto scripts_before = p.store_scripts();
    a->signal(SIGCONT);
    const int status = a->wait(10s);
    BOOST_TEST_MESSAGE("worker: " << a->output());
    BOOST_TEST(status == 1, "status " << status << ": " << a->output());  // 1: its calls failed
    BOOST_TEST(a->field("errors") == 3);
    BOOST_TEST(a->field("other_errors") == 0);
    BOOST_TEST(a->output().find("the rebuild lock was lost while the loader ran") != std::string::npos, a->output());
    BOOST_TEST(p.store_scripts() - scripts_before == 0);  // no write tried
    BOOST_TEST(p.store().cli({"GET", p.key}) == newer);
}

// The loading process dies (SIGKILL) in the middle of its load: nobody releases its lock, and the others take
// over once its TTL runs out.
BOOST_AUTO_TEST_CASE(a_loader_killed_mid_load_is_taken_over_within_the_lock_ttl)
{
    cache_processes p;
    auto a = p.stuck_loader(SIGKILL);
    BOOST_TEST(a->wait(5s) == 128 + SIGKILL);

    others_take_over(p);
    for (int i = 0; i < 3; ++i) BOOST_TEST(p.nodes[i].cli({"EXISTS", "{" + p.key + "}:rebuild"}) == "0");
}
