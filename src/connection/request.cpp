#include <redlock/request.hpp>

#include <algorithm>
#include <cctype>

namespace redlock {

bool request::answered_by_push(std::string_view command) noexcept
{
    static constexpr std::string_view push_answered[] = {"SUBSCRIBE",    "UNSUBSCRIBE", "PSUBSCRIBE",
                                                         "PUNSUBSCRIBE", "SSUBSCRIBE",  "SUNSUBSCRIBE"};
    auto same = [command](std::string_view name) {
        return std::equal(command.begin(), command.end(), name.begin(), name.end(),
                          [](char a, char b) { return std::toupper(static_cast<unsigned char>(a)) == b; });
    };
    return std::any_of(std::begin(push_answered), std::end(push_answered), same);
}

namespace {
std::string_view view_of(const arg& a) noexcept
{
    return a.view();
}
std::string_view view_of(const std::string& text) noexcept
{
    return text;
}

// numkeys, keys..., args...: what follows the script in EVALSHA and EVAL.
template <class Keys, class Args>
std::vector<std::string> script_params(const Keys& keys, const Args& args)
{
    std::vector<std::string> params;
    params.reserve(1 + keys.size() + args.size());
    params.push_back(std::to_string(keys.size()));
    for (const auto& k : keys) params.emplace_back(view_of(k));
    for (const auto& a : args) params.emplace_back(view_of(a));
    return params;
}
}  // namespace

void request::push_script(const script& s, std::initializer_list<arg> keys, std::initializer_list<arg> args)
{
    push_script_params(s, script_params(keys, args));
}

void request::push_script(const script& s, const std::vector<std::string>& keys, const std::vector<std::string>& args)
{
    push_script_params(s, script_params(keys, args));
}

void request::push_script_params(const script& s, std::vector<std::string> params)
{
    std::vector<std::string_view> views{"EVALSHA", s.sha1()};
    views.insert(views.end(), params.begin(), params.end());
    script_calls_.push_back(script_call{expected_replies_, s, std::move(params)});
    append(views);
}

request request::eval_fallback(const std::vector<const script_call*>& calls)
{
    request out;
    for (const script_call* call : calls) {
        std::vector<std::string_view> views{"EVAL", call->code.source()};
        views.insert(views.end(), call->params.begin(), call->params.end());
        out.append(views);
    }
    return out;
}

void request::clear()
{
    payload_.clear();
    commands_ = 0;
    expected_replies_ = 0;
    script_calls_.clear();
}

}  // namespace redlock
