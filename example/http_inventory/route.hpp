// Which endpoint a request is for: the target parsed into a route, without any I/O.
#pragma once

// message.hpp first: verb.hpp alone misses <ostream> in Boost 1.81.
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/verb.hpp>

#include <string>
#include <string_view>

namespace http_inventory {

enum class endpoint {
    get_item,     ///< GET /items/{id}
    put_item,     ///< PUT /items/{id}
    reserve,      ///< POST /items/{id}/reserve
    metrics,      ///< GET /metrics
    healthz,      ///< GET /healthz
    readyz,       ///< GET /readyz
    not_found,    ///< no such path
    bad_method,   ///< a known path, another method: 405 with `allow`
    bad_item_id,  ///< /items/{id} with an id outside [A-Za-z0-9_-]{1,64}
};

struct route {
    endpoint kind = endpoint::not_found;
    std::string item_id;  ///< for the /items endpoints
    std::string allow;    ///< for bad_method: the methods the path accepts
};

/// Item ids become parts of Redis keys and of JSON text: a short, plain alphabet keeps both trivially safe.
bool valid_item_id(std::string_view id);

/// The route of `method` on `target` (the query string, if any, is ignored).
route parse_route(boost::beast::http::verb method, std::string_view target);

/// The route's name as the metrics label it.
const char* to_string(endpoint e);

}  // namespace http_inventory
