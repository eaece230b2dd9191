#include "config.hpp"

#include <charconv>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>

namespace http_inventory {

namespace {

std::int64_t parse_integer(std::string_view text, std::string_view flag, std::int64_t min, std::int64_t max)
{
    std::int64_t value = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc{} || end != text.data() + text.size() || value < min || value > max)
        throw config_error(std::string(flag) + ": expected a whole number in [" + std::to_string(min) + ", " +
                           std::to_string(max) + "], got '" + std::string(text) + "'");
    return value;
}

// "URL,URL,...": redlock::parse_node_list, its message naming the bad entry.
std::vector<redlock::node_config> node_list(std::string_view list, std::string_view source)
{
    redlock::diagnostics diag;
    auto nodes = redlock::parse_node_list(list, diag);
    if (!nodes) throw config_error(std::string(source) + ": " + std::string(diag.client_message()));
    return *std::move(nodes);
}

// "host:port", ":port" (loopback) or "[v6]:port".
void parse_listen(std::string_view text, config& c)
{
    const auto colon = text.rfind(':');
    if (colon == std::string_view::npos)
        throw config_error("--listen: expected HOST:PORT, got '" + std::string(text) + "'");
    auto host = text.substr(0, colon);
    if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
    c.listen_host = host.empty() ? "127.0.0.1" : std::string(host);
    c.listen_port = static_cast<std::uint16_t>(parse_integer(text.substr(colon + 1), "--listen port", 0, 65535));
}

// "20/s", "600/m", "5/100ms", or "0" (off).
void parse_rate(std::string_view text, config& c)
{
    const auto slash = text.find('/');
    c.rate = parse_integer(text.substr(0, slash), "--rate", 0, 1'000'000'000);
    if (slash == std::string_view::npos) {
        if (c.rate != 0)
            throw config_error("--rate: expected COUNT/PERIOD (20/s) or 0, got '" + std::string(text) + "'");
        return;
    }
    const auto period = text.substr(slash + 1);
    // "/s" reads as "per 1 s".
    std::string count_and_unit;
    if (!period.empty() && (period.front() < '0' || period.front() > '9')) count_and_unit = "1";
    count_and_unit.append(period);
    c.rate_period = parse_duration(count_and_unit);
    if (c.rate_period.count() <= 0) throw config_error("--rate: the period must be positive");
}

ms positive_duration(std::string_view text, std::string_view flag)
{
    const auto d = parse_duration(text);
    if (d.count() <= 0) throw config_error(std::string(flag) + ": must be above zero");
    return d;
}

}  // namespace

ms parse_duration(std::string_view text)
{
    std::int64_t number = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), number);
    if (ec != std::errc{} || number < 0 || text.empty() || text.front() == '-')
        throw config_error("expected a duration such as 500ms, 10s or 2m, got '" + std::string(text) + "'");
    const std::string_view unit(end, static_cast<std::size_t>(text.data() + text.size() - end));
    static const std::map<std::string_view, std::int64_t> scales{{"", 1}, {"ms", 1}, {"s", 1000}, {"m", 60'000}};
    const auto scale = scales.find(unit);
    if (scale == scales.end())
        throw config_error("expected a duration such as 500ms, 10s or 2m, got '" + std::string(text) + "'");
    if (number > std::numeric_limits<std::int32_t>::max() / scale->second)
        throw config_error("duration too long: '" + std::string(text) + "'");
    return ms(number * scale->second);
}

config parse_config(const std::vector<std::string_view>& args, const char* env_nodes)
{
    config c;
    using setter = std::function<void(std::string_view)>;
    const std::map<std::string_view, setter> flags{
        {"--listen", [&](std::string_view v) { parse_listen(v, c); }},
        {"--nodes", [&](std::string_view v) { c.lock_nodes = node_list(v, "--nodes"); }},
        {"--store", [&](std::string_view v) { c.store = std::string(v); }},
        {"--rate", [&](std::string_view v) { parse_rate(v, c); }},
        {"--burst", [&](std::string_view v) { c.burst = parse_integer(v, "--burst", 0, 1'000'000); }},
        {"--lock-ttl", [&](std::string_view v) { c.lock_ttl = positive_duration(v, "--lock-ttl"); }},
        {"--request-timeout",
         [&](std::string_view v) { c.request_timeout = positive_duration(v, "--request-timeout"); }},
        {"--header-timeout", [&](std::string_view v) { c.header_timeout = positive_duration(v, "--header-timeout"); }},
        {"--body-timeout", [&](std::string_view v) { c.body_timeout = positive_duration(v, "--body-timeout"); }},
        {"--write-timeout", [&](std::string_view v) { c.write_timeout = positive_duration(v, "--write-timeout"); }},
        {"--idle-timeout", [&](std::string_view v) { c.idle_timeout = positive_duration(v, "--idle-timeout"); }},
        {"--drain-timeout", [&](std::string_view v) { c.drain_timeout = positive_duration(v, "--drain-timeout"); }},
        {"--shutdown-delay", [&](std::string_view v) { c.shutdown_delay = parse_duration(v); }},
        {"--header-limit",
         [&](std::string_view v) {
             c.header_limit = static_cast<std::uint32_t>(parse_integer(v, "--header-limit", 256, 1 << 20));
         }},
        {"--body-limit",
         [&](std::string_view v) {
             c.body_limit = static_cast<std::uint64_t>(parse_integer(v, "--body-limit", 0, 1 << 30));
         }},
        {"--max-connections",
         [&](std::string_view v) {
             c.max_connections = static_cast<std::size_t>(parse_integer(v, "--max-connections", 1, 1'000'000));
         }},
    };
    bool nodes_given = false;
    for (std::size_t i = 0; i < args.size(); ++i) {
        std::string_view name = args[i];
        std::string_view value;
        const auto eq = name.find('=');
        if (eq != std::string_view::npos) {
            value = name.substr(eq + 1);
            name = name.substr(0, eq);
        } else if (i + 1 < args.size()) {
            value = args[++i];
        } else {
            throw config_error(std::string(name) + ": missing value (see --help)");
        }
        const auto flag = flags.find(name);
        if (flag == flags.end()) throw config_error("unknown argument '" + std::string(name) + "' (see --help)");
        flag->second(value);
        nodes_given = nodes_given || name == "--nodes";
    }
    if (!nodes_given && env_nodes != nullptr) c.lock_nodes = node_list(env_nodes, "$REDLOCK_NODES");
    if (c.lock_nodes.empty()) throw config_error("no lock nodes: give --nodes URL,URL,... or set REDLOCK_NODES");
    if (c.store.empty()) throw config_error("no store: give --store URL (the Redis that keeps the stock)");
    if (c.request_timeout >= c.drain_timeout)
        throw config_error("--request-timeout must be below --drain-timeout, so a drain lets accepted requests finish");
    return c;
}

std::string usage()
{
    return R"(usage: http_inventory --nodes URL,URL,... --store URL [options]

A flash-sale service: per-item stock in the --store Redis, reservations under a per-item Redlock lock
over the --nodes Redis nodes, written with the lock's fencing token.

  --listen HOST:PORT      where to accept HTTP (default 127.0.0.1:8080; port 0: any free port)
  --nodes URL,URL,...     the lock nodes (default: $REDLOCK_NODES)
  --store URL             the Redis that keeps stock, orders and rate limits (one node)
  --rate N/PERIOD         per-client limit, e.g. 20/s, 600/m; 0 turns it off (default 20/s)
  --burst N               requests allowed at once beyond the rate (default 40)
  --lock-ttl D            per-item lock lease (default 2s)
  --request-timeout D     budget of one request, lock wait included (default 5s)
  --header-timeout D      first byte to end of headers (default 10s)
  --body-timeout D        reading the body (default 10s)
  --write-timeout D       writing the response (default 10s)
  --idle-timeout D        keep-alive connection without a request (default 120s)
  --drain-timeout D       on SIGTERM, time for in-flight requests before they are cancelled (default 20s)
  --shutdown-delay D      on SIGTERM, keep accepting this long while /readyz answers 503 (default 0s)
  --header-limit BYTES    largest request header (default 8192)
  --body-limit BYTES      largest request body (default 4096)
  --max-connections N     refuse connections beyond this (default 10000)
Durations: 500ms, 10s, 2m.
)";
}

}  // namespace http_inventory
