#include "cluster/asking_request.hpp"
#include "resp/reader.hpp"

#include <algorithm>
#include <cstring>
#include <stdexcept>

namespace redlock::detail {

request asking_request(const request& req)
{
    request out;
    out.set_timeout(req.timeout());
    out.push("ASKING");
    // The payload is what request built: arrays of bulk strings, one per command.
    resp::limits limits;
    limits.max_bulk_length = std::max<std::size_t>(req.payload().size(), 1);
    limits.max_message_size = limits.max_bulk_length + 1;
    resp::reader reader(limits);
    auto space = reader.prepare(req.payload().size());
    std::memcpy(space.data(), req.payload().data(), req.payload().size());
    reader.commit(req.payload().size());
    const auto& scripts = req.script_calls();
    boost::system::error_code ec;
    while (auto command = reader.next(ec)) {
        if (command->elements.empty()) continue;
        const auto reply_index = out.expected_replies() - 1;  // in `req`, without ASKING
        auto call =
            std::find_if(scripts.begin(), scripts.end(), [&](const auto& c) { return c.reply_index == reply_index; });
        if (call != scripts.end() && command->elements.front().text == "EVALSHA" && call->param_count > 0) {
            const auto params = req.script_params(*call);
            const auto keys = static_cast<std::size_t>(std::stoul(params.front()));
            const auto keys_end = params.begin() + 1 + static_cast<std::ptrdiff_t>(keys);
            out.push_script(call->code, std::vector<std::string>(params.begin() + 1, keys_end),
                            std::vector<std::string>(keys_end, params.end()));
            continue;
        }
        std::vector<std::string> args;
        args.reserve(command->elements.size() - 1);
        for (std::size_t i = 1; i < command->elements.size(); ++i) args.push_back(std::move(command->elements[i].text));
        out.push_range(command->elements.front().text, args);
    }
    if (ec) throw std::logic_error("asking_request: a request's payload is not RESP: " + ec.message());
    return out;
}

}  // namespace redlock::detail
