#include "common/host_port.hpp"
#include "sentinel/sentinel_replies.hpp"

#include <algorithm>

namespace redlock::detail {

namespace {

bool is_text(const resp::value& v) noexcept
{
    return v.data_type == resp::type::bulk_string || v.data_type == resp::type::simple_string ||
           v.data_type == resp::type::verbatim_string;
}

// The port of a reply element: a string (SENTINEL replies) or an integer.
std::optional<std::uint16_t> port_of(const resp::value& v)
{
    if (v.data_type == resp::type::integer) {
        auto n = v.as_integer();
        if (!n || *n <= 0 || *n > 65535) return std::nullopt;
        return static_cast<std::uint16_t>(*n);
    }
    return is_text(v) ? read_port(v.text) : std::nullopt;
}

}  // namespace

std::string address_text(const server_address& address)
{
    return host_port_text(address.host, address.port);
}

master_answer read_master_answer(const resp::value& reply)
{
    master_answer out;
    if (reply.is_null()) {
        out.what = master_answer::kind::unknown_master;
        return out;
    }
    if (reply.is_error()) {
        out.text = reply.text;
        // "ERR unknown command 'SENTINEL', with args beginning with: ..." (Redis 7), "ERR unknown command `SENTINEL`"
        // (6.x); a Sentinel that knows SENTINEL but not the subcommand would say "unknown subcommand".
        const bool unknown_command = reply.text.find("unknown command") != std::string::npos;
        out.what = unknown_command ? master_answer::kind::not_a_sentinel : master_answer::kind::refused;
        return out;
    }
    if (reply.data_type == resp::type::array && reply.elements.size() == 2 && is_text(reply.elements[0]) &&
        !reply.elements[0].text.empty()) {
        if (auto port = port_of(reply.elements[1])) {
            out.what = master_answer::kind::address;
            out.address = server_address{reply.elements[0].text, *port};
            return out;
        }
    }
    out.text = to_string(reply);
    return out;
}

std::vector<server_address> read_sentinels(const resp::value& reply)
{
    std::vector<server_address> out;
    if (reply.data_type != resp::type::array && reply.data_type != resp::type::set) return out;
    for (const auto& entry : reply.elements) {
        if (entry.data_type != resp::type::map && entry.data_type != resp::type::array) continue;
        std::string host;
        std::optional<std::uint16_t> port;
        for (std::size_t i = 0; i + 1 < entry.elements.size(); i += 2) {
            const auto& field = entry.elements[i].text;
            if (field == "ip" && is_text(entry.elements[i + 1])) host = entry.elements[i + 1].text;
            if (field == "port") port = port_of(entry.elements[i + 1]);
        }
        if (!host.empty() && port) out.push_back(server_address{host, *port});
    }
    return out;
}

std::string read_role(const resp::value& reply)
{
    if (reply.data_type != resp::type::array || reply.elements.empty() || !is_text(reply.elements[0])) return {};
    return reply.elements[0].text;
}

std::optional<switch_master> read_switch_master(std::string_view payload)
{
    std::vector<std::string_view> words;
    while (!payload.empty()) {
        const auto space = payload.find(' ');
        const auto word = payload.substr(0, space);
        if (!word.empty()) words.push_back(word);
        if (space == std::string_view::npos) break;
        payload.remove_prefix(space + 1);
    }
    if (words.size() != 5) return std::nullopt;
    auto from_port = read_port(words[2]);
    auto to_port = read_port(words[4]);
    if (!from_port || !to_port) return std::nullopt;
    return switch_master{std::string(words[0]), server_address{std::string(words[1]), *from_port},
                         server_address{std::string(words[3]), *to_port}};
}

const resp::value* not_master_refusal(const response& resp) noexcept
{
    for (const auto& reply : resp) {
        const auto text = reply.error_text();
        if (text.starts_with("READONLY") || text.starts_with("LOADING") || text.starts_with("MASTERDOWN"))
            return &reply;
    }
    return nullptr;
}

sentinel_list::sentinel_list(std::vector<server_address> seeds)
{
    learn(seeds);
}

void sentinel_list::answered(const server_address& address)
{
    auto at = std::find(order_.begin(), order_.end(), address);
    if (at == order_.end()) {
        order_.insert(order_.begin(), address);
    } else {
        std::rotate(order_.begin(), at, at + 1);
    }
}

std::vector<server_address> sentinel_list::learn(const std::vector<server_address>& addresses)
{
    std::vector<server_address> added;
    for (const auto& address : addresses) {
        if (std::find(order_.begin(), order_.end(), address) != order_.end()) continue;
        order_.push_back(address);
        added.push_back(address);
    }
    return added;
}

}  // namespace redlock::detail
