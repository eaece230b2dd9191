// The replies to one request, one value per command that expects a reply.
#pragma once

#include <redlock/resp/value.hpp>

#include <vector>

namespace redlock {

using response = std::vector<resp::value>;

}  // namespace redlock
