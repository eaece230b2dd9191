// The Bloom filter's scripts: each checks the filter's shape against the one stored beside the bitmap, then
// sets or reads the items' bits, in one call.
#include "common/embedded_script.hpp"
#include "lua/cache.hpp"
#include "recipes/cache/bloom_math.hpp"

#include <redlock/bloom_filter.hpp>
#include <redlock/detail/access.hpp>
#include <redlock/key_layout.hpp>
#include <redlock/script.hpp>

namespace redlock {

namespace detail {

namespace {

const script& add_script()
{
    return embedded_script<lua::cache_bloom_add>();
}

const script& contains_script()
{
    return embedded_script<lua::cache_bloom_contains>();
}

}  // namespace

std::unique_ptr<bloom_exchange> bloom_request(const std::string& name, std::uint64_t bits, std::uint32_t hashes,
                                              const std::vector<std::string>& items, bool add)
{
    if (bits == 0 || items.empty()) return nullptr;
    const bloom_shape shape{bits, hashes};
    std::vector<std::string> args;
    args.reserve(2 + items.size() * hashes);
    args.push_back("m=" + std::to_string(bits) + " k=" + std::to_string(hashes) + " murmur3-x64-128-dh");
    args.push_back(std::to_string(hashes));
    std::vector<std::uint64_t> positions;
    for (const auto& item : items) {
        positions.clear();
        bloom_positions(item, shape, positions);
        for (auto p : positions) args.push_back(std::to_string(p));
    }
    auto io = std::make_unique<bloom_exchange>();
    io->routing_key = name;
    io->req.push_script(add ? add_script() : contains_script(), std::vector<std::string>{name, aux_name(name, "bloom")},
                        args);
    return io;
}

error_code bloom_added(const response& resp, std::uint64_t& added)
{
    if (resp.size() != 1) return make_error_code(error::protocol_error);
    if (resp[0].is_error()) return make_error_code(error::server_error);
    const auto n = resp[0].as_integer();
    if (!n || *n < 0) return make_error_code(error::protocol_error);
    added = static_cast<std::uint64_t>(*n);
    return {};
}

error_code bloom_present(const response& resp, std::size_t items, std::vector<bool>& present, bool& missing)
{
    if (resp.size() != 1) return make_error_code(error::protocol_error);
    if (resp[0].is_error()) return make_error_code(error::server_error);
    missing = resp[0].as_integer() == -1;
    if (missing) {
        present.assign(items, true);
        return {};
    }
    if (resp[0].data_type != resp::type::array || resp[0].elements.size() != items)
        return make_error_code(error::protocol_error);
    present.clear();
    for (const auto& e : resp[0].elements) {
        const auto bit = e.as_integer();
        if (!bit) return make_error_code(error::protocol_error);
        present.push_back(*bit == 1);
    }
    return {};
}

void report_missing_filter(diagnostics& diag, const std::string& name)
{
    access::set_client_message(diag, "the Bloom filter " + name +
                                         " does not exist on the store (never added to, or lost: FLUSHDB, a restart "
                                         "without persistence, an eviction): every item reads as maybe present");
}

}  // namespace detail

bloom_filter::bloom_filter(redis store, std::string name, std::uint64_t expected_items, double false_positive_rate)
    : store_(std::move(store)),
      name_(std::move(name)),
      expected_items_(expected_items),
      false_positive_rate_(false_positive_rate)
{
    const auto shape = detail::size_bloom(expected_items, false_positive_rate);
    if (shape && !name_.empty()) {
        bits_ = shape->bits;
        hashes_ = shape->hashes;
    }
}

double bloom_filter::predicted_rate(std::uint64_t items) const noexcept
{
    return detail::bloom_false_positive_rate({bits_, hashes_}, items);
}

}  // namespace redlock
