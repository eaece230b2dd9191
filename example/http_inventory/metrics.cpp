#include "metrics.hpp"

#include <charconv>

namespace http_inventory {

namespace {

std::string number(double v)
{
    char text[32];
    auto [end, ec] = std::to_chars(text, text + sizeof text, v);  // shortest text that reads back as v
    return std::string(text, ec == std::errc{} ? end : text);
}

void family(std::string& out, const char* name, const char* type, const char* help)
{
    out += "# HELP ";
    out += name;
    out += ' ';
    out += help;
    out += "\n# TYPE ";
    out += name;
    out += ' ';
    out += type;
    out += '\n';
}

}  // namespace

void metrics::observe_request(endpoint e, unsigned status, std::chrono::steady_clock::duration took)
{
    const std::string route = to_string(e);
    ++requests_[{route, status}];
    auto& h = durations_[route];
    const double seconds = std::chrono::duration<double>(took).count();
    std::size_t bucket = 0;
    while (bucket < histogram::bounds.size() && seconds > histogram::bounds[bucket]) ++bucket;
    ++h.counts[bucket];
    h.sum_seconds += seconds;
    ++h.count;
}

std::string metrics::to_prometheus(bool draining) const
{
    std::string out;
    family(out, "inventory_http_requests_total", "counter", "HTTP requests answered, by route and status code.");
    for (const auto& [key, n] : requests_)
        out += "inventory_http_requests_total{route=\"" + key.first + "\",code=\"" + std::to_string(key.second) +
               "\"} " + std::to_string(n) + "\n";

    family(out, "inventory_http_request_duration_seconds", "histogram",
           "Time from a request's last header byte to its response, by route.");
    for (const auto& [route, h] : durations_) {
        std::uint64_t cumulative = 0;
        const std::string labels = "route=\"" + route + "\"";
        for (std::size_t i = 0; i < histogram::bounds.size(); ++i) {
            cumulative += h.counts[i];
            out += "inventory_http_request_duration_seconds_bucket{" + labels + ",le=\"" +
                   number(histogram::bounds[i]) + "\"} " + std::to_string(cumulative) + "\n";
        }
        out += "inventory_http_request_duration_seconds_bucket{" + labels + ",le=\"+Inf\"} " + std::to_string(h.count) +
               "\n";
        out += "inventory_http_request_duration_seconds_sum{" + labels + "} " + number(h.sum_seconds) + "\n";
        out += "inventory_http_request_duration_seconds_count{" + labels + "} " + std::to_string(h.count) + "\n";
    }

    family(out, "inventory_reservations_total", "counter",
           "Reservation outcomes: reserved, replayed, sold_out, unknown_item, busy, unavailable, fenced_out, "
           "outcome_unknown, deadline_passed.");
    for (const auto& [result, n] : reservations_)
        out += "inventory_reservations_total{result=\"" + result + "\"} " + std::to_string(n) + "\n";

    family(out, "inventory_rate_limited_total", "counter", "Requests answered 429 by the per-client limit.");
    out += "inventory_rate_limited_total " + std::to_string(rate_limited_) + "\n";
    family(out, "inventory_rate_limiter_errors_total", "counter",
           "Limiter calls that failed (the request was served: the limit fails open).");
    out += "inventory_rate_limiter_errors_total " + std::to_string(rate_limiter_errors_) + "\n";

    family(out, "inventory_http_connections_dropped_total", "counter",
           "Connections closed without a response: timeouts by phase, refused over --max-connections.");
    for (const auto& [why, n] : dropped_)
        out += "inventory_http_connections_dropped_total{reason=\"" + why + "\"} " + std::to_string(n) + "\n";

    family(out, "inventory_http_connections_total", "counter", "Connections accepted.");
    out += "inventory_http_connections_total " + std::to_string(connections_total_) + "\n";
    family(out, "inventory_http_connections", "gauge", "Connections open.");
    out += "inventory_http_connections " + std::to_string(connections_open_) + "\n";
    family(out, "inventory_http_requests_in_flight", "gauge", "Requests being handled.");
    out += "inventory_http_requests_in_flight " + std::to_string(in_flight_) + "\n";
    family(out, "inventory_draining", "gauge", "1 once SIGTERM started the drain.");
    out += std::string("inventory_draining ") + (draining ? "1" : "0") + "\n";
    return out;
}

}  // namespace http_inventory
