// The service's own counters, rendered in the Prometheus text format next to the lock client's.
#pragma once

#include "route.hpp"

#include <array>
#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <utility>

namespace http_inventory {

/// Touched only from the io_context's one thread (the service runs on one), so plain integers do.
class metrics {
public:
    /// One answered request: its route, status code and time from the end of its header to the response.
    void observe_request(endpoint e, unsigned status, std::chrono::steady_clock::duration took);
    void count_reservation(const char* result) { ++reservations_[result]; }
    void count_rate_limited() { ++rate_limited_; }
    void count_rate_limiter_error() { ++rate_limiter_errors_; }
    /// A connection dropped before a response: "idle", "header", "body", "write" timeouts, or "refused".
    void count_dropped(const char* why) { ++dropped_[why]; }

    void connection_opened() { ++connections_total_, ++connections_open_; }
    void connection_closed() { --connections_open_; }
    void request_started() { ++in_flight_; }
    void request_finished() { --in_flight_; }
    std::int64_t in_flight() const { return in_flight_; }
    std::int64_t connections_open() const { return connections_open_; }

    /// `# HELP`, `# TYPE` and samples of every family, names prefixed `inventory_`; `draining` as a gauge.
    std::string to_prometheus(bool draining) const;

private:
    struct histogram {
        static constexpr std::array<double, 12> bounds{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                                       0.1,   0.25,   0.5,   1.0,  2.5,   5.0};
        std::array<std::uint64_t, bounds.size() + 1> counts{};  // per bucket, not cumulative; last: above all
        double sum_seconds = 0;
        std::uint64_t count = 0;
    };

    std::map<std::pair<std::string, unsigned>, std::uint64_t> requests_;
    std::map<std::string, histogram> durations_;
    std::map<std::string, std::uint64_t> reservations_;
    std::map<std::string, std::uint64_t> dropped_;
    std::uint64_t rate_limited_ = 0;
    std::uint64_t rate_limiter_errors_ = 0;
    std::uint64_t connections_total_ = 0;
    std::int64_t connections_open_ = 0;
    std::int64_t in_flight_ = 0;
};

}  // namespace http_inventory
