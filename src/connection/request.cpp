#include <redlock/request.hpp>

#include <boost/container/small_vector.hpp>

#include <algorithm>
#include <cctype>
#include <charconv>

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

// EVALSHA, the SHA, numkeys, keys..., args...: on the stack for the usual few.
using script_views = boost::container::small_vector<std::string_view, 12>;

template <class Keys, class Args>
void fill_views(script_views& views, const script& s, std::string_view numkeys, const Keys& keys, const Args& args)
{
    views.reserve(3 + keys.size() + args.size());
    views.push_back("EVALSHA");
    views.push_back(s.sha1());
    views.push_back(numkeys);
    for (const auto& k : keys) views.push_back(view_of(k));
    for (const auto& a : args) views.push_back(view_of(a));
}

// The end of the RESP line (header) that starts at `at` in `payload`, past its CRLF.
std::size_t line_end(std::string_view payload, std::size_t at)
{
    return payload.find("\r\n", at) + 2;
}

// The bulk string that starts at `at` ("$<length>\r\n<bytes>\r\n"): its bytes, and where the next one starts.
std::pair<std::string_view, std::size_t> bulk_at(std::string_view payload, std::size_t at)
{
    const auto data = line_end(payload, at);
    std::size_t length = 0;
    std::from_chars(payload.data() + at + 1, payload.data() + data - 2, length);
    return {payload.substr(data, length), data + length + 2};
}
}  // namespace

void request::push_script(const script& s, std::initializer_list<arg> keys, std::initializer_list<arg> args)
{
    const arg numkeys(keys.size());
    script_views views;
    fill_views(views, s, numkeys.view(), keys, args);
    push_evalsha(s, views);
}

void request::push_script(const script& s, const std::vector<std::string>& keys, const std::vector<std::string>& args)
{
    const arg numkeys(keys.size());
    script_views views;
    fill_views(views, s, numkeys.view(), keys, args);
    push_evalsha(s, views);
}

void request::push_evalsha(const script& s, std::span<const std::string_view> views)
{
    const auto start = payload_.size();
    script_call call{expected_replies_, s};
    append(views);
    const auto past_sha = bulk_at(payload_, bulk_at(payload_, line_end(payload_, start)).second).second;
    call.params_begin = past_sha;
    call.params_end = payload_.size();
    call.param_count = views.size() - 2;
    script_calls_.push_back(std::move(call));
}

std::vector<std::string> request::script_params(const script_call& call) const
{
    std::vector<std::string> out;
    for (std::size_t at = call.params_begin; out.size() < call.param_count;) {
        auto [bytes, next] = bulk_at(payload_, at);
        out.emplace_back(bytes);
        at = next;
    }
    return out;
}

request request::eval_fallback(const std::vector<const script_call*>& calls,
                               const std::vector<const wait_call*>& waits) const
{
    request out;
    for (const script_call* call : calls) {
        resp::append_array_header(out.payload_, 2 + call->param_count);
        resp::append_bulk_string(out.payload_, "EVAL");
        resp::append_bulk_string(out.payload_, call->code.source());
        out.payload_.append(payload_, call->params_begin, call->params_end - call->params_begin);
        ++out.commands_;
        ++out.expected_replies_;
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
