#include "common/embedded_script.hpp"
#include "lua/common.hpp"
#include "lua/mutex.hpp"
#include "primitives/mutex/fencing.hpp"
#include "primitives/mutex/lock_scripts.hpp"

#include <redlock/key_layout.hpp>

#include <limits>
#include <string_view>

namespace redlock::detail::lock_scripts {

const script& acquire()
{
    return embedded_script<lua::common_acquire>();
}

const script& acquire_reading_fence()
{
    return embedded_script<lua::mutex_acquire_reading_fence>();
}

const script& acquire_incrementing_fence()
{
    return embedded_script<lua::mutex_acquire_incrementing_fence>();
}

const script& commit_fence()
{
    return embedded_script<lua::common_commit_fence>();
}

const script& extend()
{
    return embedded_script<lua::common_extend>();
}

const script& extend_many()
{
    return embedded_script<lua::common_extend_many>();
}

const script& release()
{
    return embedded_script<lua::mutex_release>();
}

const char* fence_step_name(fence_step fence) noexcept
{
    switch (fence) {
        case fence_step::read:
            return "read";
        case fence_step::increment:
            return "increment";
        case fence_step::none:
            break;
    }
    return "none";
}

namespace {
// The lock keys followed by their fence counters.
std::vector<std::string> keys_and_counters(const std::vector<std::string>& keys)
{
    auto all = keys;
    for (const auto& key : keys) all.push_back(fence_counter_key(key));
    return all;
}
}  // namespace

request acquire_request(const std::vector<std::string>& keys, const std::string& token, std::chrono::milliseconds ttl,
                        std::chrono::milliseconds node_timeout, fence_step fence)
{
    request req;
    const std::vector<std::string> args{token, std::to_string(ttl.count())};
    switch (fence) {
        case fence_step::none:
            req.push_script(acquire(), keys, args);
            break;
        case fence_step::read:
            req.push_script(acquire_reading_fence(), keys_and_counters(keys), args);
            break;
        case fence_step::increment:
            req.push_script(acquire_incrementing_fence(), keys_and_counters(keys), args);
            break;
    }
    req.set_timeout(node_timeout);
    return req;
}

request commit_request(const lease_spec& lease, std::uint64_t fence, std::chrono::milliseconds node_timeout)
{
    request req;
    req.push_script(commit_fence(), keys_and_counters(lease.keys), {lease.key_value, std::to_string(fence)});
    req.set_timeout(node_timeout);
    return req;
}

request extend_request(const lease_spec& lease, std::chrono::milliseconds ttl, std::chrono::milliseconds node_timeout)
{
    request req;
    req.push_script(extend(), lease.keys, {lease.token, std::to_string(ttl.count())});
    req.set_timeout(node_timeout);
    return req;
}

request extend_batch_request(const std::vector<batch_entry>& leases, std::chrono::milliseconds node_timeout)
{
    std::vector<std::string> keys, args;
    for (const auto& entry : leases) {
        const auto& lease = *entry.lease;
        keys.insert(keys.end(), lease.keys.begin(), lease.keys.end());
        args.push_back(std::to_string(lease.keys.size()));
        args.push_back(lease.token);
        args.push_back(std::to_string(entry.ttl.count()));
    }
    request req;
    req.push_script(extend_many(), keys, args);
    req.set_timeout(node_timeout);
    return req;
}

request release_request(const lease_spec& lease, std::string_view release_id, std::chrono::milliseconds node_timeout)
{
    const auto& keys = lease.keys;
    const auto& token = lease.token;
    if (keys.size() == 1) {  // every release of a one-key lock: no vectors of copies
        request req;
        req.push_script(release(), {keys.front()}, {token, release_id, release_channel(keys.front())});
        req.set_timeout(node_timeout);
        return req;
    }
    std::vector<std::string> args{token, std::string(release_id)};
    for (const auto& key : keys) args.push_back(release_channel(key));
    request req;
    req.push_script(release(), keys, args);
    req.set_timeout(node_timeout);
    return req;
}

request set_acquire_request(const std::string& key, const std::string& token, std::chrono::milliseconds ttl,
                            std::chrono::milliseconds node_timeout)
{
    request req;
    req.push("SET", key, token, "NX", "PX", ttl.count(), "GET");
    req.push("PTTL", key);
    req.set_timeout(node_timeout);
    return req;
}

vote classify_set_acquire(error_code ec, const response& resp)
{
    if (ec || resp.size() != 2) return vote::error;
    if (resp[0].is_null()) return vote::yes;
    // A token: someone holds the key. Never our own: a set acquire is only the first attempt of a fresh token.
    // (A simple string is no token: a proxy that dropped GET answers OK, and may have set the key.)
    return resp[0].data_type == resp::type::bulk_string ? vote::no : vote::error;
}

bool set_acquire_rejected(const response& resp)
{
    // Any error but WRONGTYPE (the key holds another type: the script fails on it too), and an OK from a
    // proxy that dropped GET: the script's answer is the one to trust.
    for (const auto& reply : resp) {
        if (reply.is_error() && !reply.error_text().starts_with("WRONGTYPE")) return true;
        if (reply.data_type == resp::type::simple_string) return true;
    }
    return false;
}

namespace {
std::optional<std::int64_t> script_result(error_code ec, const response& resp)
{
    if (ec || resp.size() != 1) return std::nullopt;
    return resp[0].as_integer();
}

// A fenced grant: the array {1, counter}.
const resp::value* fenced_grant(error_code ec, const response& resp)
{
    if (ec || resp.size() != 1 || resp[0].data_type != resp::type::array || resp[0].elements.size() != 2)
        return nullptr;
    if (resp[0].elements[0].as_integer() != 1) return nullptr;
    return &resp[0].elements[1];
}
}  // namespace

vote classify_acquire(error_code ec, const response& resp)
{
    if (const auto* counter = fenced_grant(ec, resp)) return parse_fence(counter->text) ? vote::yes : vote::error;
    auto n = script_result(ec, resp);
    if (!n) return vote::error;
    return *n == 1 ? vote::yes : vote::no;
}

std::optional<std::uint64_t> granted_fence(const response& resp)
{
    const auto* counter = fenced_grant({}, resp);
    if (!counter) return std::nullopt;
    return parse_fence(counter->text);
}

vote classify_commit(error_code ec, const response& resp)
{
    auto n = script_result(ec, resp);
    if (!n) return vote::error;
    return *n == 1 ? vote::yes : vote::no;
}

vote classify_extend(error_code ec, const response& resp)
{
    auto n = script_result(ec, resp);
    if (!n) return vote::error;
    return *n == 1 ? vote::yes : vote::no;
}

bool lost_key(const response& resp)
{
    return script_result({}, resp) == 0;
}

vote classify_release(error_code ec, const response& resp)
{
    auto n = script_result(ec, resp);
    if (!n) return vote::error;
    return *n >= 0 ? vote::yes : vote::no;  // released, or nothing of ours left: both mean "not held by us"
}

std::optional<std::chrono::milliseconds> holder_ttl(const response& resp)
{
    if (resp.size() == 2 && resp[0].data_type == resp::type::bulk_string) {  // a refused set acquire: {token, PTTL}
        auto pttl = resp[1].as_integer();
        if (!pttl || *pttl <= 0) return std::nullopt;
        return std::chrono::milliseconds(*pttl);
    }
    auto n = script_result({}, resp);
    if (!n || *n >= 0) return std::nullopt;
    if (*n == std::numeric_limits<std::int64_t>::min()) return std::chrono::milliseconds::max();  // no -n
    return std::chrono::milliseconds(-*n);
}

}  // namespace redlock::detail::lock_scripts
