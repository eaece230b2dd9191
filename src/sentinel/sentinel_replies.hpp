// What Sentinels and masters answer a Sentinel node, read. Pure: the node sends the requests, unit tests feed replies.
#pragma once

#include <redlock/node_config.hpp>
#include <redlock/resp/value.hpp>
#include <redlock/response.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace redlock::detail {

/// "host:port", "[v6]:port".
std::string address_text(const server_address& address);

/// A Sentinel's answer to SENTINEL GET-MASTER-ADDR-BY-NAME.
struct master_answer {
    enum class kind {
        address,         ///< the master's address, in `address`
        unknown_master,  ///< a null: the Sentinel monitors no master of that name
        not_a_sentinel,  ///< the server does not know the SENTINEL command: no Sentinel (a data node, a wrong port)
        refused,         ///< another error reply (NOAUTH, NOPERM...), in `text`
        malformed,       ///< no [host, port] pair; what it was, in `text`
    };
    kind what = kind::malformed;
    server_address address;
    std::string text;
};
master_answer read_master_answer(const resp::value& reply);

/// The Sentinels that a reply to SENTINEL SENTINELS names (a map of fields each, RESP3, or a flat array of field and
/// value, RESP2): their `ip` and `port`. Entries without both, and error replies, give nothing.
std::vector<server_address> read_sentinels(const resp::value& reply);

/// The role in a reply to ROLE: "master", "slave", "sentinel"; empty when the reply is no ROLE reply.
std::string read_role(const resp::value& reply);

/// A `+switch-master` message: `<master-name> <old-ip> <old-port> <new-ip> <new-port>`.
struct switch_master {
    std::string master;
    server_address from;
    server_address to;
};
std::optional<switch_master> read_switch_master(std::string_view payload);

/// The error reply of `resp` that says its server is no writable master now, or null: READONLY (a replica: a
/// demoted master), LOADING (loading its data set), MASTERDOWN (a replica without its master). A request so refused
/// wrote nothing: it may be sent again to the master.
const resp::value* not_master_refusal(const response& resp) noexcept;

/// The Sentinels to ask, in order: the one that answered last first, then the URL's host, its seeds and those
/// learnt from SENTINEL SENTINELS, in the order they became known. Addresses are never forgotten.
class sentinel_list {
public:
    explicit sentinel_list(std::vector<server_address> seeds);

    const std::vector<server_address>& in_order() const noexcept { return order_; }
    /// Moves `address` to the front (it is asked first next time).
    void answered(const server_address& address);
    /// Appends the addresses not known yet; returns them.
    std::vector<server_address> learn(const std::vector<server_address>& addresses);

private:
    std::vector<server_address> order_;
};

}  // namespace redlock::detail
