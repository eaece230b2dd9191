#include "route.hpp"

namespace http_inventory {

namespace http = boost::beast::http;

bool valid_item_id(std::string_view id)
{
    if (id.empty() || id.size() > 64) return false;
    for (const char c : id) {
        const bool plain =
            (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
        if (!plain) return false;
    }
    return true;
}

route parse_route(http::verb method, std::string_view target)
{
    target = target.substr(0, target.find('?'));
    auto only = [&](http::verb allowed, const char* allow, endpoint kind, std::string_view id = {}) {
        if (method == allowed) return route{kind, std::string(id), {}};
        return route{endpoint::bad_method, std::string(id), allow};
    };
    if (target == "/metrics") return only(http::verb::get, "GET", endpoint::metrics);
    if (target == "/healthz") return only(http::verb::get, "GET", endpoint::healthz);
    if (target == "/readyz") return only(http::verb::get, "GET", endpoint::readyz);

    constexpr std::string_view items = "/items/";
    if (!target.starts_with(items)) return {};
    auto rest = target.substr(items.size());
    constexpr std::string_view reserve_suffix = "/reserve";
    const bool reserve = rest.ends_with(reserve_suffix);
    if (reserve) rest.remove_suffix(reserve_suffix.size());
    if (rest.find('/') != std::string_view::npos) return {};
    if (!valid_item_id(rest)) return {endpoint::bad_item_id, {}, {}};
    if (reserve) return only(http::verb::post, "POST", endpoint::reserve, rest);
    if (method == http::verb::put) return {endpoint::put_item, std::string(rest), {}};
    return only(http::verb::get, "GET, PUT", endpoint::get_item, rest);
}

const char* to_string(endpoint e)
{
    switch (e) {
        case endpoint::get_item:
            return "get_item";
        case endpoint::put_item:
            return "put_item";
        case endpoint::reserve:
            return "reserve";
        case endpoint::metrics:
            return "metrics";
        case endpoint::healthz:
            return "healthz";
        case endpoint::readyz:
            return "readyz";
        case endpoint::not_found:
            return "not_found";
        case endpoint::bad_method:
            return "bad_method";
        case endpoint::bad_item_id:
            return "bad_item_id";
    }
    return "unknown";
}

}  // namespace http_inventory
