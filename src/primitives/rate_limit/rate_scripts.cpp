#include "common/embedded_script.hpp"
#include "lua/rate_limit.hpp"
#include "primitives/rate_limit/rate_arguments.hpp"
#include "primitives/rate_limit/rate_scripts.hpp"

#include <redlock/key_layout.hpp>

#include <array>

namespace redlock::detail::rate_scripts {

const script& gcra()
{
    return embedded_script<lua::rate_limit_gcra>();
}

const script& fixed_window()
{
    return embedded_script<lua::rate_limit_fixed_window>();
}

const script& sliding_window()
{
    return embedded_script<lua::rate_limit_sliding_window>();
}

std::string log_total_key(const std::string& key)
{
    return aux_name(key, "total");
}

request decision_request(const std::string& key, const rate_limit& limit, std::int64_t cost)
{
    request req;
    switch (limit.strategy) {
        case rate_strategy::gcra: {
            const auto u = gcra_units_of(limit).value_or(gcra_units{});
            req.push_script(gcra(), {key}, {u.interval, u.per_us, u.capacity, cost});
            break;
        }
        case rate_strategy::fixed_window:
            req.push_script(fixed_window(), {key}, {limit.rate, limit.period.count(), cost});
            break;
        case rate_strategy::sliding_window: {
            const auto total = log_total_key(key);
            req.push_script(sliding_window(), {key, total}, {limit.rate, limit.period.count() * 1000, cost});
            break;
        }
    }
    req.set_timeout(limit.node_timeout);
    return req;
}

std::optional<rate_decision> parse_decision(const response& resp)
{
    if (resp.size() != 1) return std::nullopt;
    const auto& reply = resp[0];
    if (reply.data_type != resp::type::array || reply.elements.size() != 6) return std::nullopt;
    std::array<std::int64_t, 6> f{};
    for (std::size_t i = 0; i < f.size(); ++i) {
        const auto n = reply.elements[i].as_integer();
        if (!n) return std::nullopt;
        f[i] = *n;
    }
    const auto [limited, limit, remaining, retry, reset, now] = f;
    if (limited != 0 && limited != 1) return std::nullopt;
    if (limit < 1 || remaining < 0 || reset < 0 || now <= 0) return std::nullopt;
    if (limited == 0 ? retry != -1 : retry < -1) return std::nullopt;

    rate_decision d;
    d.result = limited == 0 ? rate_decision::outcome::allowed
               : retry < 0  ? rate_decision::outcome::never
                            : rate_decision::outcome::limited;
    d.limit = limit;
    d.remaining = remaining;
    d.retry_after = std::chrono::milliseconds(retry);
    d.reset_after = std::chrono::milliseconds(reset);
    d.server_time = std::chrono::microseconds(now);
    return d;
}

vote classify_decision(error_code ec, const response& resp)
{
    if (ec) return vote::error;
    const auto d = parse_decision(resp);
    if (!d) return vote::error;
    return d->allowed() ? vote::yes : vote::no;
}

}  // namespace redlock::detail::rate_scripts
