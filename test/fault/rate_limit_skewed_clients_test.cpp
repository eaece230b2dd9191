// Four processes take units from one GCRA limiter for over 10 s; two of them run under the clock shim with wall
// clocks skewed by hours and stepped back and forth during the run, and steady clocks that run 1.5 and 0.6
// times as fast as real time. Counted by the node's clock, the 10 s after the first admission hold exactly
// rate x 10 s + burst admissions: none too many, at most 1% too few, and no span of any length holds more
// than GCRA allows. Only the node's clock counts.
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <array>
#include <chrono>
#include <common/processes/subprocess.hpp>
#include <common/servers/redis_node.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
using namespace redlock::test;

namespace {

constexpr std::int64_t rate = 50;  // per second: one unit every 20 ms
constexpr std::int64_t period_ms = 1000;
constexpr std::int64_t burst = 24;  // a TAT up to 480 ms ahead: a client stalled that long loses nothing
constexpr std::int64_t interval_us = period_ms * 1000 / rate;
constexpr std::int64_t window_us = 10'000'000;
constexpr std::int64_t expected = rate * window_us / 1'000'000 + burst;  // floor(rate x 10 s) + burst

struct admission {
    std::int64_t server_us;
    std::int64_t remaining;
    int client;
};

struct client_report {
    std::int64_t system_minus_real_ms = 0;
    long limited = -1;
    long errors = -1;
    long steady_ms = 0;
    long real_ms = 0;
    int exit_code = -1;
    std::string output;
};

std::int64_t node_time_us(const redis_node& node)
{
    std::istringstream reply(node.cli({"TIME"}));
    std::int64_t seconds = 0, micros = 0;
    reply >> seconds >> micros;
    return seconds * 1'000'000 + micros;
}

// The shim re-reads the file by path: write a new one and rename it over the old, so no read sees half of it.
void set_client_clock(const std::string& path, std::int64_t offset_ms, double wall_rate)
{
    const std::string next = path + ".next";
    {
        std::ofstream out(next, std::ios::trunc);
        out << offset_ms << " " << wall_rate << "\n";
    }
    std::filesystem::rename(next, path);
}

client_report read_report(const std::string& output, int client, std::vector<admission>& admitted)
{
    client_report r;
    r.output = output;
    std::istringstream in(output);
    for (std::string line; std::getline(in, line);) {
        long long a = 0, b = 0, c = 0, d = 0;
        if (std::sscanf(line.c_str(), "admitted %lld %lld", &a, &b) == 2) {
            admitted.push_back({a, b, client});
        } else if (std::sscanf(line.c_str(), "clock system_minus_real_ms=%lld", &a) == 1) {
            r.system_minus_real_ms = a;
        } else if (std::sscanf(line.c_str(), "done limited=%lld errors=%lld steady_ms=%lld real_ms=%lld", &a, &b, &c,
                               &d) == 4) {
            r.limited = static_cast<long>(a);
            r.errors = static_cast<long>(b);
            r.steady_ms = static_cast<long>(c);
            r.real_ms = static_cast<long>(d);
        }
    }
    return r;
}

}  // namespace

BOOST_AUTO_TEST_CASE(four_processes_two_with_skewed_jumping_clocks_admit_exactly_rate_times_ten_seconds_plus_burst)
{
    cluster nodes(1);  // the node's clock is the real one: only the clients' clocks are skewed
    const std::string dir = make_temp_dir("redlock-rate-clients-");
    const std::string helper = std::string(REDLOCK_TEST_HELPER_DIR) + "/helper_rate_client";
    const std::int64_t end_us = node_time_us(nodes[0]) + 12'500'000;

    struct skew {
        std::int64_t offset_ms;  // the wall clock at the start, against the real one
        double wall_rate;
        const char* steady_rate;  // REDLOCK_CLOCKSHIM_MONOTONIC_RATE
    };
    const std::vector<std::optional<skew>> skews{std::nullopt, std::nullopt, skew{+3'600'000, 1.0, "1.5"},
                                                 skew{-86'400'000, 2.0, "0.6"}};
    std::vector<pid_t> pids;
    std::vector<std::string> outputs, clock_files;
    for (std::size_t i = 0; i < skews.size(); ++i) {
        spawn_options o;
        o.args = {helper,
                  nodes[0].url(),
                  "paced",
                  std::to_string(rate),
                  std::to_string(period_ms),
                  std::to_string(burst),
                  std::to_string(end_us)};
        std::vector<std::string> env;
        if (skews[i]) {
            const std::string clock_file = dir + "/client-" + std::to_string(i) + ".clock";
            set_client_clock(clock_file, skews[i]->offset_ms, skews[i]->wall_rate);
            clock_files.push_back(clock_file);
            env = {std::string("LD_PRELOAD=") + REDLOCK_TEST_CLOCKSHIM, "REDLOCK_CLOCKSHIM_FILE=" + clock_file,
                   std::string("REDLOCK_CLOCKSHIM_MONOTONIC_RATE=") + skews[i]->steady_rate,
                   "ASAN_OPTIONS=verify_asan_link_order=0"};
        }
        o.env = environment_with(env);
        o.output_file = dir + "/client-" + std::to_string(i) + ".out";
        outputs.push_back(o.output_file);
        pids.push_back(spawn_process(o));
    }

    // Step the skewed wall clocks back and forth by hours while the clients run.
    const std::vector<std::pair<std::int64_t, double>> steps[] = {
        {{+86'400'000, 1.0}, {-7'200'000, 3.0}, {+1'000, 0.5}, {-600'000, 1.0}},
        {{+3'600'000, 0.5}, {-86'400'000, 1.0}, {+120'000, 2.0}, {-1'000, 1.0}},
    };
    for (std::size_t s = 0; s < 4; ++s) {
        std::this_thread::sleep_for(2s);
        for (std::size_t c = 0; c < clock_files.size(); ++c)
            set_client_clock(clock_files[c], steps[c][s].first, steps[c][s].second);
    }

    std::vector<admission> admitted;
    std::vector<client_report> reports;
    for (std::size_t i = 0; i < pids.size(); ++i) {
        int status = 0;
        BOOST_REQUIRE_MESSAGE(wait_for_exit(pids[i], 60s, &status), "client " << i << " did not finish");
        reports.push_back(read_report(file_contents(outputs[i]), static_cast<int>(i), admitted));
        reports.back().exit_code = exit_status(status);
    }
    std::filesystem::remove_all(dir);

    for (std::size_t i = 0; i < reports.size(); ++i) {
        const auto& r = reports[i];
        BOOST_TEST_CONTEXT("client " << i << ": " << r.output.substr(0, 300))
        {
            BOOST_TEST(r.exit_code == 0);
            BOOST_TEST(r.errors == 0);
            BOOST_TEST(r.limited >= 0);  // it reported its end
            if (skews[i]) {
                // The shim works in a client: its wall clock read the skew, its steady clock ran at the rate.
                BOOST_TEST(std::abs(r.system_minus_real_ms - skews[i]->offset_ms) < 1000);
                const double steady_rate = std::stod(skews[i]->steady_rate);
                BOOST_TEST(std::abs(static_cast<double>(r.steady_ms) / static_cast<double>(r.real_ms) - steady_rate) <
                           0.05 * steady_rate);
            } else {
                BOOST_TEST(std::abs(r.system_minus_real_ms) < 1000);
            }
        }
    }

    BOOST_REQUIRE(!admitted.empty());
    std::sort(admitted.begin(), admitted.end(),
              [](const admission& a, const admission& b) { return a.server_us < b.server_us; });
    const auto t0 = admitted.front().server_us;
    BOOST_REQUIRE_MESSAGE(admitted.back().server_us >= t0 + window_us, "the clients stopped before the 10 s ended");
    const auto in_window = std::count_if(admitted.begin(), admitted.end(),
                                         [&](const admission& a) { return a.server_us < t0 + window_us; });
    std::array<long, 4> per_client{};
    for (const auto& a : admitted)
        if (a.server_us < t0 + window_us) ++per_client[static_cast<std::size_t>(a.client)];
    BOOST_TEST_MESSAGE("admitted in the 10 s: " << in_window << " of " << expected << "; per client " << per_client[0]
                                                << ", " << per_client[1] << ", " << per_client[2] << " (skewed), "
                                                << per_client[3] << " (skewed)");
    BOOST_TEST(in_window <= expected);                // no over-admission
    BOOST_TEST(in_window * 100 >= expected * 99);     // at most 1% under
    BOOST_TEST(admitted.front().remaining == burst);  // the burst was offered at once
    BOOST_TEST(per_client[2] + per_client[3] > 0);    // the skewed clients were admitted too

    // GCRA's bound over every span: admissions i..j (by the node's time) number at most
    // floor((t_j - t_i) / interval) + burst + 1.
    std::size_t violations = 0;
    for (std::size_t i = 0; i < admitted.size(); ++i)
        for (std::size_t j = i; j < admitted.size(); ++j) {
            const auto allowed = (admitted[j].server_us - admitted[i].server_us) / interval_us + burst + 1;
            if (static_cast<std::int64_t>(j - i + 1) > allowed) ++violations;
        }
    BOOST_TEST(violations == 0u);
}
