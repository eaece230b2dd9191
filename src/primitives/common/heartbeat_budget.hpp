// The heartbeat budget of a waiter whose attempts keep something of it alive on the nodes (a fair waiter's place in
// the queue, a waiting writer's mark): its waiter_ttl must outlast the longest gap between two of its attempts.
#pragma once

#include <redlock/lock_options.hpp>

#include <string>
#include <string_view>

namespace redlock::detail {

/// What is wrong with `o.waiter_ttl` for such a waiter (`waiter` names it in the message: "a fair waiter"), or an
/// empty string.
std::string heartbeat_budget_problem(const lock_options& o, std::string_view waiter);

}  // namespace redlock::detail
