// client_stats in the Prometheus text exposition format 0.0.4, and as plain text.
#include <redlock/stats.hpp>

#include <cstdio>
#include <utility>

namespace redlock {
namespace {

class exposition {
public:
    exposition(std::string_view prefix, std::string_view labels) : prefix_(prefix), labels_(labels) {}

    void family(std::string_view name, std::string_view type, std::string_view help)
    {
        name_ = prefix_;
        name_.append("_").append(name);
        out_.append("# HELP ").append(name_).append(" ").append(help).append("\n");
        out_.append("# TYPE ").append(name_).append(" ").append(type).append("\n");
    }
    /// One sample of the current family: `suffix` after its name (_bucket...), `label` one more label or empty.
    void sample(std::uint64_t value, std::string_view label = {}, std::string_view suffix = {})
    {
        start(label, suffix);
        out_.append(std::to_string(value)).append("\n");
    }
    void sample(double value, std::string_view label = {}, std::string_view suffix = {})
    {
        start(label, suffix);
        char text[32];
        std::snprintf(text, sizeof text, "%.9g", value);
        out_.append(text).append("\n");
    }
    std::string take() { return std::move(out_); }

private:
    void start(std::string_view label, std::string_view suffix)
    {
        out_.append(name_).append(suffix);
        if (!labels_.empty() || !label.empty()) {
            out_.append("{").append(labels_);
            if (!labels_.empty() && !label.empty()) out_.append(",");
            out_.append(label).append("}");
        }
        out_.append(" ");
    }

    std::string prefix_, labels_, name_, out_;
};

// A label value as the format escapes it: backslash, double quote and line feed.
std::string label(std::string_view name, std::string_view value)
{
    std::string out(name);
    out.append("=\"");
    for (char c : value) {
        if (c == '\\' || c == '"') out.push_back('\\');
        if (c == '\n') {
            out.append("\\n");
            continue;
        }
        out.push_back(c);
    }
    return out.append("\"");
}

}  // namespace

std::string to_prometheus(const client_stats& s, std::string_view prefix, std::string_view labels)
{
    exposition e(prefix, labels);
    e.family("acquires_total", "counter", "Leases granted (locks and semaphore permits).");
    e.sample(s.acquires);
    e.family("acquire_failures_total", "counter", "Lock and acquire calls that failed, by reason.");
    e.sample(s.failures.not_acquired, label("reason", "not_acquired"));
    e.sample(s.failures.no_quorum, label("reason", "no_quorum"));
    e.sample(s.failures.timeout, label("reason", "timeout"));
    e.sample(s.failures.cancelled, label("reason", "cancelled"));
    e.sample(s.failures.invalid_argument, label("reason", "invalid_argument"));
    e.sample(s.failures.exceeds_limit, label("reason", "exceeds_limit"));
    e.sample(s.failures.replica_acks, label("reason", "replica_acks"));
    e.sample(s.failures.other, label("reason", "other"));
    e.family("acquire_duration_seconds", "histogram",
             "Time from a lock or acquire call to its grant, waiting included.");
    const auto& h = s.acquire_latency;
    char bound[32];
    for (std::size_t i = 0; i < latency_histogram::bounds.size(); ++i) {
        std::snprintf(bound, sizeof bound, "%g", latency_histogram::bounds[i]);
        e.sample(h.counts[i], label("le", bound), "_bucket");
    }
    e.sample(h.count(), label("le", "+Inf"), "_bucket");
    e.sample(h.sum_seconds, {}, "_sum");
    e.sample(h.count(), {}, "_count");
    e.family("handoffs_total", "counter", "Grants that a release message started: a waiter taking over.");
    e.sample(s.handoffs);
    e.family("wakeups_total", "counter", "Waits that ended, by what ended them.");
    e.sample(s.wakeups_by_message, label("cause", "message"));
    e.sample(s.wakeups_by_timer, label("cause", "timer"));
    e.family("extensions_total", "counter", "Lease extensions (watchdog and explicit), by result.");
    e.sample(s.extensions, label("result", "ok"));
    e.sample(s.extension_failures, label("result", "failed"));
    e.family("releases_total", "counter", "Lease releases, by result.");
    e.sample(s.releases, label("result", "ok"));
    e.sample(s.release_failures, label("result", "failed"));
    e.family("leases_lost_total", "counter", "Leases lost before their release.");
    e.sample(s.losses);
    e.family("subscriptions_restored_total", "counter", "Release-channel subscriptions restored after reconnects.");
    e.sample(s.subscriptions_restored);
    e.family("bloom_filter_missing_total", "counter",
             "Cache guard misses that found their Bloom filter missing (they load every key).");
    e.sample(s.bloom_filter_missing);
    e.family("node_errors_total", "counter", "Failed answers of each node (timeouts, broken connections, errors).");
    for (const auto& n : s.nodes) e.sample(n.errors, label("node", n.node));
    e.family("node_reconnects_total", "counter", "Established connections to each node that broke.");
    for (const auto& n : s.nodes) e.sample(n.connection.disconnects, label("node", n.node));
    e.family("node_server_info", "gauge",
             "The server each node runs and its version, as its HELLO announced them (unknown before).");
    for (const auto& n : s.nodes) {
        const auto labels = label("node", n.node) + "," + label("server", to_string(n.server.kind)) + "," +
                            label("version", version_text(n.server.version));
        e.sample(std::uint64_t{1}, labels);
    }
    return e.take();
}

std::string to_text(const client_stats& s)
{
    const auto& f = s.failures;
    auto count = [](std::string_view name, std::uint64_t n) { return std::string(name) + " " + std::to_string(n); };
    std::string out = count("acquires", s.acquires);
    const std::uint64_t failed =
        f.not_acquired + f.no_quorum + f.timeout + f.cancelled + f.invalid_argument + f.exceeds_limit + f.other;
    out += "  " + count("failures", failed);
    if (failed != 0) {
        std::string reasons;
        for (const auto& [name, n] : {std::pair<std::string_view, std::uint64_t>{"not_acquired", f.not_acquired},
                                      {"no_quorum", f.no_quorum},
                                      {"timeout", f.timeout},
                                      {"cancelled", f.cancelled},
                                      {"invalid_argument", f.invalid_argument},
                                      {"exceeds_limit", f.exceeds_limit},
                                      {"other", f.other}})
            if (n != 0) reasons += (reasons.empty() ? "" : ", ") + count(name, n);
        out += " (" + reasons + ")";
    }
    if (const auto n = s.acquire_latency.count(); n != 0) {
        char mean[32];
        std::snprintf(mean, sizeof mean, "%.3f", s.acquire_latency.sum_seconds * 1000.0 / static_cast<double>(n));
        out += "  mean acquire " + std::string(mean) + " ms";
    }
    out += "\n" + count("handoffs", s.handoffs) + "  " + count("wakeups by message", s.wakeups_by_message) + "  " +
           count("by timer", s.wakeups_by_timer) + "\n";
    out += count("extensions", s.extensions) + " (" + count("failed", s.extension_failures) + ")  " +
           count("releases", s.releases) + " (" + count("failed", s.release_failures) + ")  " +
           count("leases lost", s.losses) + "\n";
    out += count("subscriptions restored", s.subscriptions_restored) + "  " +
           count("bloom filter missing", s.bloom_filter_missing) + "\n";
    for (const auto& n : s.nodes)
        out += "node " + n.node + "  server " + to_string(n.server) + "  " + count("errors", n.errors) + "  " +
               count("reconnects", n.connection.disconnects) + "\n";
    return out;
}

}  // namespace redlock
