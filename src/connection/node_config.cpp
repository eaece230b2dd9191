#include "common/host_port.hpp"

#include <redlock/detail/access.hpp>
#include <redlock/error.hpp>
#include <redlock/node_config.hpp>

#include <boost/system/system_error.hpp>
#include <boost/url/parse.hpp>
#include <boost/url/url_view.hpp>

#include <charconv>
#include <optional>

namespace redlock {
namespace {

// Where a Sentinel listens unless the URL says.
constexpr std::uint16_t sentinel_port = 26379;

std::optional<long long> to_number(std::string_view text)
{
    long long value = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc{} || end != text.data() + text.size() || text.empty()) return std::nullopt;
    return value;
}

// Between the entries of a node list: a comma or ASCII whitespace, which no URL holds unencoded.
bool is_separator(char c)
{
    return c == ',' || c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

std::optional<bool> to_bool(std::string_view text)
{
    if (text == "true" || text == "1" || text == "yes") return true;
    if (text == "false" || text == "0" || text == "no") return false;
    return std::nullopt;
}

// A seed's `host:port`, `[v6]:port` (or a bare v6 host: the port is required); nullopt when it is not one.
std::optional<server_address> to_seed(std::string_view text)
{
    auto read = detail::read_host_port(text);
    if (!read || read->host.empty()) return std::nullopt;
    server_address seed;
    seed.host = read->host;
    seed.port = read->port;
    return seed;
}

// Fills `out` from the URL; returns what is wrong, or an empty string.
std::string fill(const boost::urls::url_view& u, node_config& out)
{
    const std::string scheme = u.scheme();
    if (scheme == "redis" || scheme == "redis+cluster" || scheme == "redis+sentinel") {
        out.kind = node_config::transport::tcp;
    } else if (scheme == "rediss" || scheme == "rediss+cluster" || scheme == "rediss+sentinel") {
        out.kind = node_config::transport::tls;
    } else if (scheme == "unix") {
        out.kind = node_config::transport::unix_socket;
    } else {
        return "unknown scheme '" + scheme +
               "' (expected redis, rediss, unix, redis+cluster, rediss+cluster, redis+sentinel or rediss+sentinel)";
    }
    out.cluster = scheme.ends_with("+cluster");
    out.sentinel = scheme.ends_with("+sentinel");
    if (out.sentinel) out.port = sentinel_port;

    if (u.has_userinfo()) {
        out.username = u.user();
        out.password = u.password();
    }

    if (out.kind == node_config::transport::unix_socket) {
        if (!u.host().empty()) return "a unix URL has no host: write unix:///path/to.sock";
        out.path = u.path();
        if (out.path.empty() || out.path == "/") return "the unix socket path is missing";
    } else {
        if (u.host().empty()) return "the host is missing";
        out.host = u.host_address();
        if (u.has_port()) {
            auto port = to_number(u.port());
            if (!port || *port <= 0 || *port > 65535) return "port '" + std::string(u.port()) + "' is not in 1..65535";
            out.port = static_cast<std::uint16_t>(*port);
        }
        std::string path = u.path();
        if (out.sentinel) {
            // The path is the master's name: one segment, percent-decoded.
            const auto segments = u.segments();
            if (segments.size() > 1)
                return "the path is the master's name alone: '" + path + "' has more (encode a '/' in it as %2F)";
            if (segments.empty() || (*segments.begin()).empty())
                return "the master's name is missing: write redis+sentinel://host:port/MASTER-NAME";
            out.sentinel_master = *segments.begin();
        } else if (!path.empty() && path != "/") {
            auto db = to_number(std::string_view(path).substr(1));
            if (!db || *db < 0 || *db > 1'000'000) return "database '" + path.substr(1) + "' is not a number >= 0";
            out.db = static_cast<int>(*db);
        }
    }

    for (auto param : u.params()) {
        const std::string key = param.key;
        const std::string value = param.value;
        if (key == "db") {
            auto db = to_number(value);
            if (!db || *db < 0 || *db > 1'000'000) return "database '" + value + "' is not a number >= 0";
            out.db = static_cast<int>(*db);
        } else if (key == "client_name") {
            out.client_name = value;
        } else if (key == "ca_file") {
            out.tls.ca_file = value;
        } else if (key == "cert_file") {
            out.tls.cert_file = value;
        } else if (key == "key_file") {
            out.tls.key_file = value;
        } else if (key == "server_name") {
            out.tls.server_name = value;
        } else if (key == "track_keys") {
            auto track = to_bool(value);
            if (!track) return "track_keys='" + value + "' is not true or false";
            out.track_keys = *track;
        } else if (key == "verify") {
            auto verify = to_bool(value);
            if (!verify) return "verify='" + value + "' is not true or false";
            out.tls.verify_peer = *verify;
        } else if (key == "seed" && (out.cluster || out.sentinel)) {
            auto seed = to_seed(value);
            if (!seed) return "seed '" + value + "' is not host:port";
            (out.cluster ? out.cluster_seeds : out.sentinel_seeds).push_back(*std::move(seed));
        } else if (key == "seed") {
            return "'seed' is a parameter of cluster and sentinel URLs only (redis+cluster://, redis+sentinel://...)";
        } else if ((key == "sentinel_user" || key == "sentinel_password") && out.sentinel) {
            (key == "sentinel_user" ? out.sentinel_username : out.sentinel_password) = value;
        } else if (key == "sentinel_user" || key == "sentinel_password") {
            return "'" + key + "' is a parameter of redis+sentinel:// and rediss+sentinel:// URLs only";
        } else {
            return "unknown parameter '" + key + "'";
        }
    }
    // Redis Cluster serves database 0 only (SELECT fails there).
    if (out.cluster && out.db != 0) return "a Redis Cluster has database 0 only";
    if (!out.sentinel_username.empty() && out.sentinel_password.empty())
        return "sentinel_user needs sentinel_password (a user without a password is not sent)";
    return {};
}

// `text` percent-encoded but for the unreserved characters, so that it reads back as it is (a master's name).
void append_encoded(std::string& out, std::string_view text)
{
    static constexpr char hex[] = "0123456789ABCDEF";
    for (const unsigned char c : text) {
        const bool plain = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
                           c == '.' || c == '_' || c == '~';
        if (plain) {
            out += static_cast<char>(c);
        } else {
            out += '%';
            out += hex[c >> 4];
            out += hex[c & 15];
        }
    }
}

}  // namespace

std::string node_config::to_string() const
{
    std::string out;
    switch (kind) {
        case transport::unix_socket:
            return "unix://" + path;
        case transport::tls:
            out = cluster ? "rediss+cluster://" : sentinel ? "rediss+sentinel://" : "rediss://";
            break;
        case transport::tcp:
            out = cluster ? "redis+cluster://" : sentinel ? "redis+sentinel://" : "redis://";
            break;
    }
    // Appends only: g++ 12 at -O3 reports a false -Wrestrict in `"literal" + std::to_string(n)` (libstdc++'s
    // operator+(const char*, string&&) inlined into a replace).
    if (!username.empty()) {
        out += username;
        out += '@';
    }
    out += detail::host_port_text(host, port);
    if (sentinel) {
        out += '/';
        append_encoded(out, sentinel_master);
    } else if (db != 0) {
        out += '/';
        out += std::to_string(db);
    }
    // A query cannot hold brackets unencoded: a seed's IPv6 address goes bare, its last colon before the port.
    char separator = '?';
    auto parameter = [&](std::string_view key, std::string_view value) {
        out += separator;
        separator = '&';
        out += key;
        out += '=';
        out += value;
    };
    for (const auto& seed : sentinel ? sentinel_seeds : cluster_seeds) {
        std::string text = seed.host;
        text += ':';
        text += std::to_string(seed.port);
        parameter("seed", text);
    }
    if (sentinel && db != 0) parameter("db", std::to_string(db));
    if (sentinel && !sentinel_username.empty()) {
        std::string user;
        append_encoded(user, sentinel_username);
        parameter("sentinel_user", user);
    }
    return out;
}

boost::system::result<node_config> parse_url(std::string_view url, diagnostics& diag)
{
    diag.clear();
    auto fail = [&](std::string why) -> boost::system::result<node_config> {
        detail::access::set_client_message(diag, "invalid node URL '" + std::string(url) + "': " + why);
        return make_error_code(error::invalid_argument);
    };
    auto parsed = boost::urls::parse_uri(url);
    if (!parsed)
        return fail(
            "not a URL (expected redis://host:port, rediss://host:port, unix:///path, redis+cluster://host:port or "
            "redis+sentinel://host:port/MASTER-NAME)");
    node_config out;
    if (auto why = fill(*parsed, out); !why.empty()) return fail(std::move(why));
    return out;
}

node_config parse_url(std::string_view url)
{
    diagnostics diag;
    auto result = parse_url(url, diag);
    if (!result) throw boost::system::system_error(result.error(), std::string(diag.client_message()));
    return *std::move(result);
}

boost::system::result<std::vector<node_config>> parse_node_list(std::string_view list, diagnostics& diag)
{
    diag.clear();
    std::vector<std::string_view> entries;
    for (std::size_t at = 0; at < list.size();) {
        if (is_separator(list[at])) {
            ++at;
            continue;
        }
        std::size_t end = at;
        while (end < list.size() && !is_separator(list[end])) ++end;
        entries.push_back(list.substr(at, end - at));
        at = end;
    }
    std::vector<node_config> nodes;
    nodes.reserve(entries.size());
    for (std::size_t i = 0; i < entries.size(); ++i) {
        auto parsed = parse_url(entries[i], diag);
        if (!parsed) {
            if (entries.size() > 1) {
                detail::access::set_client_message(diag, "node " + std::to_string(i + 1) + " of " +
                                                             std::to_string(entries.size()) + ": " +
                                                             std::string(diag.client_message()));
            }
            return parsed.error();
        }
        nodes.push_back(*std::move(parsed));
    }
    return nodes;
}

std::vector<node_config> parse_node_list(std::string_view list)
{
    diagnostics diag;
    auto result = parse_node_list(list, diag);
    if (!result) throw boost::system::system_error(result.error(), std::string(diag.client_message()));
    return *std::move(result);
}

}  // namespace redlock
