#include "common/embedded_script.hpp"
#include "lua/cache.hpp"
#include "recipes/cache/cache_entry.hpp"
#include "recipes/cache/cache_store.hpp"

#include <redlock/script.hpp>

namespace redlock::detail {

namespace {

const script& store_script()
{
    return embedded_script<lua::cache_store>();
}

}  // namespace

request store_request(const std::string& key, std::uint64_t token, const std::string& entry,
                      std::chrono::milliseconds ttl)
{
    request req;
    req.push_script(store_script(), std::vector<std::string>{key},
                    std::vector<std::string>{std::to_string(token), entry, std::to_string(ttl.count())});
    return req;
}

error_code read_store_reply(const resp::value& reply, store_reply& out)
{
    if (reply.is_error()) return make_error_code(error::server_error);
    if (reply.data_type != resp::type::array || reply.elements.empty()) return make_error_code(error::protocol_error);
    const auto written = reply.elements[0].as_integer();
    if (!written || (*written == 0 && reply.elements.size() != 2)) return make_error_code(error::protocol_error);
    out.written = *written == 1;
    if (!out.written) out.newer = reply.elements[1].text;
    return {};
}

}  // namespace redlock::detail
