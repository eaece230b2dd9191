#include "cluster/slot_map.hpp"
#include "common/host_port.hpp"

#include <algorithm>

namespace redlock::detail {

namespace {

// A field of a RESP3 map, or of a RESP2 array of name, value pairs; null when absent.
const resp::value* field(const resp::value& v, std::string_view name)
{
    if (v.data_type != resp::type::map && v.data_type != resp::type::array) return nullptr;
    for (std::size_t i = 0; i + 1 < v.elements.size(); i += 2) {
        if (v.elements[i].text == name) return &v.elements[i + 1];
    }
    return nullptr;
}

std::string_view text_of(const resp::value* v)
{
    return v != nullptr && !v->is_aggregate() && !v->is_null() ? std::string_view(v->text) : std::string_view();
}

std::optional<std::uint16_t> slot_of(const resp::value& v)
{
    auto n = v.as_integer();
    if (!n || *n < 0 || *n >= cluster_slots) return std::nullopt;
    return static_cast<std::uint16_t>(*n);
}

std::optional<std::uint16_t> port_of(const resp::value* v)
{
    if (v == nullptr) return std::nullopt;
    auto n = v->as_integer();
    if (!n || *n <= 0 || *n > 65535) return std::nullopt;
    return static_cast<std::uint16_t>(*n);
}

// A node's address as the reply gives it: an empty or "?" endpoint means "the member you asked".
std::string host_or_queried(std::string_view host, std::string_view queried)
{
    return host.empty() || host == "?" ? std::string(queried) : std::string(host);
}

}  // namespace

std::string master_address::text() const
{
    return host_port_text(host, port);
}

const master_address* slot_map::owner(std::uint16_t slot) const noexcept
{
    if (slot >= owner_.size() || owner_[slot] == no_owner) return nullptr;
    return &masters_[owner_[slot]];
}

std::size_t slot_map::uncovered_slots() const noexcept
{
    return static_cast<std::size_t>(std::count(owner_.begin(), owner_.end(), no_owner));
}

void slot_map::assign(std::uint16_t first, std::uint16_t last, const master_address& master)
{
    auto at = std::find(masters_.begin(), masters_.end(), master);
    if (at == masters_.end()) at = masters_.insert(masters_.end(), master);
    const auto index = static_cast<std::uint16_t>(at - masters_.begin());
    for (std::size_t slot = first; slot <= last && slot < owner_.size(); ++slot) owner_[slot] = index;
    drop_unused_masters();
}

// A master that lost its last slot (to a MOVED) leaves the list, so masters() names only owners.
void slot_map::drop_unused_masters()
{
    std::vector<bool> used(masters_.size(), false);
    for (auto index : owner_) {
        if (index != no_owner) used[index] = true;
    }
    if (std::all_of(used.begin(), used.end(), [](bool u) { return u; })) return;
    std::vector<std::uint16_t> renumbered(masters_.size(), no_owner);
    std::vector<master_address> kept;
    for (std::size_t i = 0; i < masters_.size(); ++i) {
        if (!used[i]) continue;
        renumbered[i] = static_cast<std::uint16_t>(kept.size());
        kept.push_back(std::move(masters_[i]));
    }
    masters_ = std::move(kept);
    for (auto& index : owner_) {
        if (index != no_owner) index = renumbered[index];
    }
}

std::optional<slot_map> read_cluster_shards(const resp::value& reply, const slot_map_source& source, std::string& why)
{
    if (reply.data_type != resp::type::array) {
        why = "CLUSTER SHARDS did not answer an array: " + to_string(reply);
        return std::nullopt;
    }
    slot_map map;
    for (const auto& shard : reply.elements) {
        const auto* slots = field(shard, "slots");
        const auto* nodes = field(shard, "nodes");
        if (slots == nullptr || nodes == nullptr || !slots->is_aggregate() || !nodes->is_aggregate()) {
            why = "a CLUSTER SHARDS entry without slots and nodes: " + to_string(shard);
            return std::nullopt;
        }
        if (slots->elements.empty()) continue;  // a shard that serves nothing (a new, empty master)
        const resp::value* master = nullptr;
        for (const auto& node : nodes->elements) {
            if (text_of(field(node, "role")) != "master") continue;
            if (master == nullptr || text_of(field(node, "health")) == "online") master = &node;
        }
        if (master == nullptr) {
            why = "a CLUSTER SHARDS entry without a master: " + to_string(shard);
            return std::nullopt;
        }
        auto port = source.tls && field(*master, "tls-port") != nullptr ? port_of(field(*master, "tls-port"))
                                                                        : port_of(field(*master, "port"));
        if (!port) port = port_of(field(*master, "tls-port"));
        if (!port) {
            why = "a CLUSTER SHARDS master without a port: " + to_string(*master);
            return std::nullopt;
        }
        auto host = text_of(field(*master, "endpoint"));
        if (host.empty() || host == "?") host = text_of(field(*master, "ip"));
        const master_address address{host_or_queried(host, source.queried_host), *port};
        if (slots->elements.size() % 2 != 0) {
            why = "CLUSTER SHARDS slots are not pairs: " + to_string(*slots);
            return std::nullopt;
        }
        for (std::size_t i = 0; i < slots->elements.size(); i += 2) {
            auto first = slot_of(slots->elements[i]);
            auto last = slot_of(slots->elements[i + 1]);
            if (!first || !last || *first > *last) {
                why = "CLUSTER SHARDS slot range is not within 0..16383: " + to_string(*slots);
                return std::nullopt;
            }
            map.assign(*first, *last, address);
        }
    }
    if (map.empty()) {
        why = "the cluster assigns no slot to any master";
        return std::nullopt;
    }
    return map;
}

std::optional<slot_map> read_cluster_slots(const resp::value& reply, const slot_map_source& source, std::string& why)
{
    if (reply.data_type != resp::type::array) {
        why = "CLUSTER SLOTS did not answer an array: " + to_string(reply);
        return std::nullopt;
    }
    slot_map map;
    for (const auto& range : reply.elements) {
        if (range.data_type != resp::type::array || range.elements.size() < 3 ||
            range.elements[2].data_type != resp::type::array || range.elements[2].elements.size() < 2) {
            why = "a CLUSTER SLOTS entry is not [first, last, [host, port...]...]: " + to_string(range);
            return std::nullopt;
        }
        auto first = slot_of(range.elements[0]);
        auto last = slot_of(range.elements[1]);
        const auto& master = range.elements[2];
        auto port = port_of(&master.elements[1]);
        if (!first || !last || *first > *last || !port) {
            why = "a CLUSTER SLOTS entry has a bad slot range or port: " + to_string(range);
            return std::nullopt;
        }
        map.assign(*first, *last, {host_or_queried(text_of(&master.elements[0]), source.queried_host), *port});
    }
    if (map.empty()) {
        why = "the cluster assigns no slot to any master";
        return std::nullopt;
    }
    return map;
}

}  // namespace redlock::detail
