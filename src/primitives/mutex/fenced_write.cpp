#include "common/embedded_script.hpp"
#include "lua/mutex.hpp"
#include "primitives/common/fencing.hpp"

#include <redlock/fenced_write.hpp>
#include <redlock/script.hpp>

namespace redlock {

namespace {

const script& fenced_write_script()
{
    return detail::embedded_script<detail::lua::mutex_fenced_write>();
}

}  // namespace

fenced_write::fenced_write(std::string guard, std::uint64_t token)
    : token_(token), keys_{std::move(guard)}, args_{std::to_string(token)}
{}

fenced_write& fenced_write::command(std::string_view name, std::string key, std::initializer_list<arg> args)
{
    keys_.push_back(std::move(key));
    args_.emplace_back(name);
    args_.push_back(std::to_string(args.size()));
    for (const auto& a : args) args_.emplace_back(a.view());
    return *this;
}

std::string fenced_write::invalid() const
{
    if (token_ == 0) return "fencing token 0: the lease was taken without lock_options::fencing";
    if (token_ > std::uint64_t(INT64_MAX)) return "the fencing token is beyond the range of a Redis counter";
    if (keys_.front().empty()) return "the guard key is empty";
    if (keys_.size() == 1) return "a fenced write needs a command";
    for (std::size_t i = 1; i < keys_.size(); ++i)
        if (keys_[i].empty()) return "a fenced command's key is empty";
    return {};
}

request fenced_write::to_request() const
{
    request req;
    req.push_script(fenced_write_script(), keys_, args_);
    return req;
}

std::tuple<error_code, std::uint64_t> fenced_write::outcome(const resp::value& reply)
{
    if (reply.is_error()) return {make_error_code(error::server_error), 0};
    if (reply.data_type != resp::type::array || reply.elements.size() != 2)
        return {make_error_code(error::protocol_error), 0};
    const auto applied = reply.elements[0].as_integer();
    const auto resource_token = detail::parse_fence(reply.elements[1].text);
    if (!applied || !resource_token) return {make_error_code(error::protocol_error), 0};
    if (*applied != 1) return {make_error_code(error::stale_token), *resource_token};
    return {error_code{}, *resource_token};
}

}  // namespace redlock
