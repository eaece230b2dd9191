// Where a node is and how to talk to it; parsed from a redis://, rediss://, unix://, redis+cluster://,
// rediss+cluster://, redis+sentinel:// or rediss+sentinel:// URL.
#pragma once

#include <redlock/diagnostics.hpp>
#include <redlock/resp/limits.hpp>

#include <boost/system/result.hpp>

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace redlock {

/// The TLS settings of a rediss:// node (the URL's ca_file, cert_file, key_file, verify and server_name).
struct tls_options {
    std::string ca_file;      ///< PEM file of trusted CAs; empty = the system's default paths
    std::string cert_file;    ///< client certificate (PEM), for servers that require one
    std::string key_file;     ///< client private key (PEM)
    bool verify_peer = true;  ///< verify the server's certificate chain and host name
    std::string server_name;  ///< name to verify and send as SNI; empty = the URL's host
};

/// A server's host and port: one more member of a Redis Cluster to read the slot map through, or one more Sentinel
/// to ask for the master (a `seed=host:port` of a cluster or sentinel URL).
struct server_address {
    std::string host;
    std::uint16_t port = 6379;
    friend bool operator==(const server_address&, const server_address&) = default;
};

/// A `seed=host:port` of a cluster URL (the name it had before Sentinel URLs took seeds too).
using cluster_seed = server_address;

/// Where a node is and how to talk to it. parse_url makes one from a URL; the timeouts and limits may be changed
/// before it is given to a client or a connection.
struct node_config {
    /// redis:// (tcp), rediss:// (tls) or unix:// (unix_socket).
    enum class transport { tcp, tls, unix_socket };

    transport kind = transport::tcp;
    std::string host = "127.0.0.1";
    std::uint16_t port = 6379;
    std::string path;      ///< unix socket path
    std::string username;  ///< empty = "default" when a password is given
    std::string password;
    int db = 0;
    std::string client_name;  ///< sent with HELLO SETNAME when not empty
    tls_options tls;
    /// A Redis Cluster (redis+cluster://, rediss+cluster://): host and port are one member, `cluster_seeds` more;
    /// the node reads the slot map through any of them and opens one connection per master, each with these
    /// settings (auth, TLS, timeouts). False: one server.
    bool cluster = false;
    std::vector<cluster_seed> cluster_seeds;
    /// A Sentinel-managed master (redis+sentinel://, rediss+sentinel://): host and port are one Sentinel (port 26379
    /// unless the URL says), `sentinel_seeds` more; the node asks them for the address of the master named
    /// `sentinel_master`, checks with ROLE that it is the master, and follows its failovers. The credentials above
    /// (username, password), db and client_name are the master's; the Sentinels get `sentinel_username` and
    /// `sentinel_password` (no AUTH when the password is empty); both get the TLS settings and the timeouts.
    bool sentinel = false;
    std::string sentinel_master;
    std::vector<server_address> sentinel_seeds;
    std::string sentinel_username;  ///< empty = "default" when sentinel_password is given
    std::string sentinel_password;

    std::chrono::milliseconds connect_timeout{2000};        ///< connect + TLS + HELLO, per attempt
    std::chrono::milliseconds request_timeout{5000};        ///< default deadline of a request
    std::chrono::milliseconds health_check_interval{1000};  ///< PING when idle this long
    std::chrono::milliseconds health_check_timeout{3000};   ///< dead when nothing is read this long while waiting
    std::chrono::milliseconds reconnect_min_delay{50};      ///< first backoff after a failure
    std::chrono::milliseconds reconnect_max_delay{2000};    ///< backoff doubles up to this
    bool reconnect = true;
    /// Client tracking (`CLIENT TRACKING on NOLOOP`, sent with the handshake): the server tells the client at once
    /// when a key it read changes by another client's write, an expiry or an eviction, so that a lease whose keys
    /// vanish is known lost within a round trip, not at its next extension. A server that refuses it (an ACL user
    /// without `client|tracking`) is used without; the client's log says so once. The URL's `track_keys=false`.
    bool track_keys = true;
    /// What one reply may be. Smaller than the parser's defaults: a lock client reads tiny replies, and a
    /// value tree costs ~40x its wire size, so this caps what a hostile server can make us allocate.
    resp::limits limits{.max_depth = 16,
                        .max_bulk_length = 16 * 1024 * 1024,
                        .max_aggregate_size = 1024 * 1024,
                        .max_line_length = 64 * 1024,
                        .max_message_size = 32 * 1024 * 1024};

    /// The URL of this node without its password, for messages and logs.
    std::string to_string() const;
};

/// Parses `redis://[user[:password]@]host[:port][/db]`, `rediss://...` (TLS) or `unix:///path/to.sock`, and a
/// Redis Cluster as `redis+cluster://[user[:password]@]host[:port][?seed=host:port&seed=...]` or
/// `rediss+cluster://...` (TLS): `cluster` is true and each `seed` (an IPv6 address bare, `seed=::1:7000`, or in
/// encoded brackets, `seed=%5B::1%5D:7000`) is one more member to read the slot map through; a Cluster has database 0
/// only. A Sentinel-managed master as
/// `redis+sentinel://[user[:password]@]host[:port]/MASTER-NAME[?seed=host:port&seed=...&db=N]` or
/// `rediss+sentinel://...` (TLS): `sentinel` is true, host:port (port 26379 by default) and each `seed` are Sentinels,
/// the path is the master's name (required; percent-encoded when it holds reserved characters), the URL's user and
/// password are the master's, and `sentinel_user` / `sentinel_password` the Sentinels' (none by default); its database
/// is the `db` parameter. Query parameters: `db`, `client_name`, `track_keys` (true|false), and for TLS `ca_file`,
/// `cert_file`, `key_file`, `verify` (true|false), `server_name`. Fails with error::invalid_argument;
/// `diag.client_message()` names what is wrong.
boost::system::result<node_config> parse_url(std::string_view url, diagnostics& diag);

/// As above; throws boost::system::system_error(error::invalid_argument, "what is wrong").
node_config parse_url(std::string_view url);

/// Parses a list of node URLs as `$REDLOCK_NODES` or a `--nodes` flag spells it:
/// `redis://10.0.0.1:6379,redis://10.0.0.2:6379`. Entries are separated by commas and/or whitespace (space, tab,
/// newline); separators before, after and between entries are skipped, so `a,b`, `a, b`, `a b` and `a,,b,` are
/// the same two nodes, and a list of separators only (or an empty one) gives no node (a client refuses zero nodes
/// with error::invalid_argument). A URL in a list cannot hold a comma or whitespace itself: percent-encode them
/// (`%2C`, `%20`). Each entry is read by parse_url, in order; the first that does not parse fails the whole list
/// with error::invalid_argument, and `diag.client_message()` is parse_url's message, prefixed by the entry's
/// position when the list has more than one (`node 2 of 3: invalid node URL 'redis://h:99999': port '99999' is
/// not in 1..65535`). Where the list comes from (an argument, an environment variable) is the caller's business.
boost::system::result<std::vector<node_config>> parse_node_list(std::string_view list, diagnostics& diag);

/// As above; throws boost::system::system_error(error::invalid_argument, "what is wrong").
std::vector<node_config> parse_node_list(std::string_view list);

}  // namespace redlock
