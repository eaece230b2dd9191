#include "detail/lock_scripts.hpp"

#include <redlock/detail/key_layout.hpp>

namespace redlock::detail::lock_scripts {

const script& acquire()
{
    static const script s(R"lua(
for i = 1, #KEYS do
  local owner = redis.call('GET', KEYS[i])
  if owner and owner ~= ARGV[1] then
    local pttl = redis.call('PTTL', KEYS[i])
    if pttl > 0 then return -pttl end
    return 0
  end
end
for i = 1, #KEYS do
  redis.call('SET', KEYS[i], ARGV[1], 'PX', ARGV[2])
end
return 1
)lua");
    return s;
}

const script& release()
{
    static const script s(R"lua(
local released, others = 0, 0
for i = 1, #KEYS do
  local owner = redis.call('GET', KEYS[i])
  if owner == ARGV[1] then
    redis.call('DEL', KEYS[i])
    released = released + 1
    if ARGV[i + 1] then redis.call('PUBLISH', ARGV[i + 1], ARGV[1]) end
  elseif owner then
    others = others + 1
  end
end
if others > 0 then return -others end
return released
)lua");
    return s;
}

std::string release_channel(const std::string& key)
{
    return aux_name(key, "released");
}

request acquire_request(const std::vector<std::string>& keys, const std::string& token, std::chrono::milliseconds ttl,
                        std::chrono::milliseconds node_timeout)
{
    request req;
    req.push_script(acquire(), keys, {token, std::to_string(ttl.count())});
    req.set_timeout(node_timeout);
    return req;
}

request release_request(const std::vector<std::string>& keys, const std::string& token,
                        std::chrono::milliseconds node_timeout)
{
    std::vector<std::string> args{token};
    for (const auto& key : keys) args.push_back(release_channel(key));
    request req;
    req.push_script(release(), keys, args);
    req.set_timeout(node_timeout);
    return req;
}

namespace {
std::optional<std::int64_t> script_result(error_code ec, const response& resp)
{
    if (ec || resp.size() != 1) return std::nullopt;
    return resp[0].as_integer();
}
}  // namespace

vote classify_acquire(error_code ec, const response& resp)
{
    auto n = script_result(ec, resp);
    if (!n) return vote::error;
    return *n == 1 ? vote::yes : vote::no;
}

vote classify_release(error_code ec, const response& resp)
{
    auto n = script_result(ec, resp);
    if (!n) return vote::error;
    return *n >= 0 ? vote::yes : vote::no;  // released, or nothing of ours left: both mean "not held by us"
}

std::optional<std::chrono::milliseconds> holder_ttl(const response& resp)
{
    auto n = script_result({}, resp);
    if (!n || *n >= 0) return std::nullopt;
    return std::chrono::milliseconds(-*n);
}

}  // namespace redlock::detail::lock_scripts
