// A pipeline of commands to send in one write, with the number of replies to expect.
#pragma once

#include <redlock/resp/serialize.hpp>
#include <redlock/script.hpp>

#include <array>
#include <charconv>
#include <chrono>
#include <concepts>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace redlock {

/// One command argument: a string or an integer, formatted without allocating.
class arg {
public:
    arg(std::string_view text) noexcept : view_(text) {}
    arg(const std::string& text) noexcept : view_(text) {}
    arg(const char* text) noexcept : view_(text) {}
    template <std::integral Int>
    requires(!std::same_as<Int, bool> && !std::same_as<Int, char>) arg(Int number)
    noexcept
    {
        auto result = std::to_chars(digits_, digits_ + sizeof digits_, number);
        view_ = std::string_view(digits_, static_cast<std::size_t>(result.ptr - digits_));
    }
    arg(const arg&) = delete;  // view_ may point into digits_
    arg& operator=(const arg&) = delete;

    std::string_view view() const noexcept { return view_; }

private:
    char digits_[24];
    std::string_view view_;
};

/// The pub/sub commands the server answers with one confirmation push per channel: [kind, channel, count].
enum class pubsub_kind : std::uint8_t { subscribe, unsubscribe, psubscribe, punsubscribe, ssubscribe, sunsubscribe };

/// The kind of a command ("SUBSCRIBE", any letter case) or of a confirmation push's first element ("subscribe").
std::optional<pubsub_kind> pubsub_kind_of(std::string_view name) noexcept;

/// Commands to send in one write, serialized as they are pushed, with the number of replies to expect. Build it on
/// one thread; once given to async_exec it must stay alive and unchanged until the operation completes. clear()
/// makes it reusable.
class request {
public:
    /// One command: `req.push("SET", key, value, "PX", 5000)`.
    template <class... Args>
    void push(std::string_view command, const Args&... args)
    {
        const arg parts[] = {arg(command), arg(args)...};
        std::array<std::string_view, sizeof...(Args) + 1> views;
        for (std::size_t i = 0; i < views.size(); ++i) views[i] = parts[i].view();
        append(views);
    }

    /// One command whose arguments come from a range of strings: `req.push_range("DEL", keys)`.
    template <class Range>
    void push_range(std::string_view command, const Range& args)
    {
        std::vector<std::string_view> views{command};
        for (const auto& a : args) views.emplace_back(a);
        append(views);
    }

    /// EVALSHA of `s` with these keys and arguments. If the node does not know the script (NOSCRIPT, e.g.
    /// after a restart) the connection re-sends this command as EVAL, transparently.
    void push_script(const script& s, std::initializer_list<arg> keys, std::initializer_list<arg> args);
    void push_script(const script& s, const std::vector<std::string>& keys, const std::vector<std::string>& args);

    /// The serialized commands.
    std::string_view payload() const noexcept { return payload_; }
    std::size_t commands() const noexcept { return commands_; }
    /// Replies the server sends for these commands, one per ordinary command, and for SUBSCRIBE and its kin one
    /// per channel: a confirmation push each, or one error reply for the whole command (which then fills each of
    /// its places in the response, so later replies keep their indexes).
    std::size_t expected_replies() const noexcept { return expected_replies_; }
    bool empty() const noexcept { return commands_ == 0; }

    /// A command answered by confirmation pushes (SUBSCRIBE and its kin).
    struct confirmed_command {
        std::size_t first_reply;    ///< index of its first confirmation among the request's replies
        std::size_t confirmations;  ///< one per channel
        pubsub_kind kind;
        /// Its channels (or patterns), in the order the server confirms them: tells a confirmation of ours from a
        /// `sunsubscribe` the server sends on its own.
        std::vector<std::string> channels;
    };
    const std::vector<confirmed_command>& confirmed_commands() const noexcept { return confirmed_; }

    /// False when the number of replies cannot be known before they arrive: an UNSUBSCRIBE, PUNSUBSCRIBE or
    /// SUNSUBSCRIBE without channels (one push per channel subscribed at the time), or a SUBSCRIBE-family command
    /// inside MULTI. async_exec fails such a request with error::invalid_argument.
    bool countable() const noexcept { return countable_; }

    /// Deadline of each exec of this request; zero means the connection's default request timeout.
    void set_timeout(std::chrono::milliseconds timeout) noexcept { timeout_ = timeout; }
    std::chrono::milliseconds timeout() const noexcept { return timeout_; }

    void clear();

    /// A script command of this request, kept so the connection can re-send it as EVAL.
    struct script_call {
        std::size_t reply_index;
        script code;
        /// Where its parameters (numkeys, keys..., args...) are in payload(), as written: they follow the SHA in
        /// EVALSHA as they follow the source in EVAL, so a fallback copies their bytes and no request keeps a copy
        /// of them (one allocation per parameter, per request, on every lock's path).
        std::size_t params_begin = 0, params_end = 0, param_count = 0;
    };
    const std::vector<script_call>& script_calls() const noexcept { return script_calls_; }
    /// The parameters of `call`, one of this request's: numkeys, keys..., args... (copies).
    std::vector<std::string> script_params(const script_call& call) const;

    /// A WAIT of this request (replica acknowledgement): a NOSCRIPT fallback sends it again after the scripts it
    /// re-sends, so that it still follows the writes it waits for.
    struct wait_call {
        std::size_t reply_index;
        std::string replicas, timeout;
    };
    const std::vector<wait_call>& wait_calls() const noexcept { return wait_calls_; }

    /// A request holding `calls` (this request's) as EVAL commands, in order, then `waits`.
    request eval_fallback(const std::vector<const script_call*>& calls,
                          const std::vector<const wait_call*>& waits = {}) const;

private:
    template <class Views>
    void append(const Views& views)
    {
        std::size_t size = 16;  // the array header; each bulk string adds its header and CRLF
        for (std::string_view v : views) size += v.size() + 16;
        payload_.reserve(payload_.size() + size);  // one allocation per command, not one per argument
        resp::append_command(payload_, views);
        ++commands_;
        count_replies(views);
        if (views.size() == 3) note_wait(views[0], views[1], views[2]);
    }
    void count_replies(std::span<const std::string_view> command);
    void note_wait(std::string_view command, std::string_view replicas, std::string_view timeout);
    /// `views`: EVALSHA, the SHA, then the parameters.
    void push_evalsha(const script& s, std::span<const std::string_view> views);

    std::string payload_;
    std::size_t commands_ = 0;
    std::size_t expected_replies_ = 0;
    std::chrono::milliseconds timeout_{0};
    std::vector<script_call> script_calls_;
    std::vector<confirmed_command> confirmed_;
    std::vector<wait_call> wait_calls_;
    bool in_multi_ = false;
    bool countable_ = true;
};

}  // namespace redlock
