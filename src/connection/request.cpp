#include <redlock/request.hpp>

#include <algorithm>
#include <cctype>

namespace redlock {

namespace {
// `text` equals `upper` (an upper-case name) in any letter case.
bool same_name(std::string_view text, std::string_view upper) noexcept
{
    return std::equal(text.begin(), text.end(), upper.begin(), upper.end(),
                      [](char a, char b) { return std::toupper(static_cast<unsigned char>(a)) == b; });
}
}  // namespace

std::optional<pubsub_kind> pubsub_kind_of(std::string_view name) noexcept
{
    // All six end in SUBSCRIBE: one comparison rejects every other command.
    constexpr std::string_view tail = "SUBSCRIBE";
    if (name.size() < tail.size() || !same_name(name.substr(name.size() - tail.size()), tail)) return std::nullopt;
    static constexpr std::string_view names[] = {"SUBSCRIBE",    "UNSUBSCRIBE", "PSUBSCRIBE",
                                                 "PUNSUBSCRIBE", "SSUBSCRIBE",  "SUNSUBSCRIBE"};
    for (std::size_t i = 0; i < std::size(names); ++i) {
        if (same_name(name, names[i])) return static_cast<pubsub_kind>(i);
    }
    return std::nullopt;
}

void request::count_replies(std::span<const std::string_view> views)
{
    const std::string_view command = views[0];
    const std::size_t arguments = views.size() - 1;
    auto kind = pubsub_kind_of(command);
    if (!kind) {
        ++expected_replies_;
        if (same_name(command, "MULTI")) in_multi_ = true;
        if (same_name(command, "EXEC") || same_name(command, "DISCARD")) in_multi_ = false;
        return;
    }
    const bool unsubscribe =
        *kind == pubsub_kind::unsubscribe || *kind == pubsub_kind::punsubscribe || *kind == pubsub_kind::sunsubscribe;
    if (in_multi_ || (unsubscribe && arguments == 0)) countable_ = false;
    // SUBSCRIBE without channels is answered by one error (wrong number of arguments).
    const std::size_t confirmations = std::max<std::size_t>(arguments, 1);
    confirmed_.push_back(confirmed_command{expected_replies_, confirmations, *kind,
                                           std::vector<std::string>(views.begin() + 1, views.end())});
    expected_replies_ += confirmations;
}

void request::note_wait(std::string_view command, std::string_view replicas, std::string_view timeout)
{
    if (same_name(command, "WAIT"))
        wait_calls_.push_back(wait_call{expected_replies_ - 1, std::string(replicas), std::string(timeout)});
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

request request::eval_fallback(const std::vector<const script_call*>& calls, const std::vector<const wait_call*>& waits)
{
    request out;
    for (const script_call* call : calls) {
        std::vector<std::string_view> views{"EVAL", call->code.source()};
        views.insert(views.end(), call->params.begin(), call->params.end());
        out.append(views);
    }
    for (const wait_call* wait : waits) out.push("WAIT", wait->replicas, wait->timeout);
    return out;
}

void request::clear()
{
    payload_.clear();
    commands_ = 0;
    expected_replies_ = 0;
    script_calls_.clear();
    confirmed_.clear();
    wait_calls_.clear();
    in_multi_ = false;
    countable_ = true;
}

}  // namespace redlock
