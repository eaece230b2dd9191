// The replies to one request, one value per command that expects a reply.
#pragma once

#include <redlock/resp/value.hpp>

#include <vector>

namespace redlock {

/// The replies to one request, one resp::value per expected reply, in order (request::expected_replies()).
using response = std::vector<resp::value>;

}  // namespace redlock
