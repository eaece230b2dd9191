// Order ids: the client's Idempotency-Key when it sends one (so a retry finds its first attempt), else random.
#pragma once

#include <string>
#include <string_view>

namespace http_inventory {

/// An Idempotency-Key we accept as an order id: [A-Za-z0-9_.:-]{1,128}, safe in a Redis hash field and in JSON.
bool valid_order_id(std::string_view key);

/// 128 bits from the OS CSPRNG, hex: unguessable, so one client cannot replay another's reservation.
std::string new_order_id();

}  // namespace http_inventory
