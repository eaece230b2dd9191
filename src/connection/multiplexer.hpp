// The pure pipeline state of one connection: which requests wait, which were written, which reply is whose.
// No I/O and no timers: the connection drives it and it is unit-tested on its own.
#pragma once

#include <redlock/error.hpp>
#include <redlock/request.hpp>
#include <redlock/response.hpp>

#include <cstddef>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace redlock::detail {

/// The kind of a confirmation push ([subscribe, channel, count]...), or nullopt for any other value.
std::optional<pubsub_kind> confirmation_kind(const resp::value& push) noexcept;

/// One exec in flight. The connection derives from it to hold the handler, timer and cancellation state.
class exec_entry {
public:
    enum class status { waiting, staged, written, done };

    exec_entry(const request& req, response* resp) noexcept : request_(&req), response_(resp) {}
    virtual ~exec_entry() = default;

    /// Called once when every reply arrived (ec clear; some replies may be server errors) or when the entry failed.
    /// Never called for an abandoned entry.
    virtual void finish(error_code ec) = 0;

    /// Called for each confirmation push of this entry's SUBSCRIBE-family commands as it arrives, in stream
    /// order, even when the entry is abandoned (the server did (un)subscribe).
    virtual void confirmed(const resp::value& push) { (void)push; }

    /// Called just before the entry's request is serialized for writing: the last moment to change it (with
    /// reuse), once the server of this connection session is known (a SUBSCRIBE queued while connecting becomes an
    /// SSUBSCRIBE on Redis 7).
    virtual void before_write() {}

    status state() const noexcept { return status_; }
    bool abandoned() const noexcept { return abandoned_; }

    /// Points the entry at another request (and response) and makes it wait again: used to re-send scripts.
    void reuse(const request& req, response* resp) noexcept
    {
        request_ = &req;
        response_ = resp;
        status_ = status::waiting;
    }

private:
    friend class multiplexer;
    const request* request_;
    response* response_;  // null when abandoned or when the caller ignores replies
    std::size_t remaining_ = 0;
    std::size_t next_reply_ = 0;  // replies and confirmations received so far
    // Copied when added: an abandoned entry forgets its request but must still tell confirmations from replies.
    std::vector<request::confirmed_command> confirmed_;
    status status_ = status::waiting;
    bool abandoned_ = false;
};

class multiplexer {
public:
    /// What a value read from the server was: a reply (or an error reply to a SUBSCRIBE) of the oldest written
    /// entry; a confirmation of its SUBSCRIBE-family command; a push for the handlers (messages...); or
    /// `unsolicited`, a reply or confirmation nobody waits for: the stream is out of step.
    enum class consumed { reply, confirmation, push, unsolicited };

    /// Queues an entry; it is written by the next prepare_write.
    void add(std::shared_ptr<exec_entry> entry);

    /// Removes an entry that was not written yet. Returns false if it is staged or written (abandon it instead).
    bool remove(const exec_entry& entry);

    /// Forgets the caller of a staged or written entry: its replies will be read and dropped so later replies
    /// still go to the right requests.
    void abandon(exec_entry& entry) noexcept;
    /// Forgets every entry without finishing it (the execution context shuts down).
    void drop_all() noexcept
    {
        auto entries = std::move(queue_);
        queue_.clear();
        first_waiting_ = 0;
    }

    /// Serializes every waiting request into one buffer (valid until the next call) and marks them staged.
    std::string_view prepare_write();

    /// The staged bytes reached the socket.
    void commit_write();

    /// Routes one complete value read from the server (moved from when it goes to an entry). Replies go to the
    /// oldest written entry, in order. SUBSCRIBE and its kin are answered by one confirmation push per channel
    /// ([subscribe, channel, count]...) or by one error reply for the whole command: both are that command's
    /// replies, so the reply stream never shifts. Other pushes (messages...) are for the handlers, and so is a
    /// `sunsubscribe` the server sent on its own (a Cluster sends it when a sharded channel's slot moves): one
    /// nobody waits for, or one of another channel than the SUNSUBSCRIBE due. Any other confirmation while the
    /// oldest entry waits for an ordinary reply, a confirmation of the wrong kind, or an ordinary reply where a
    /// confirmation is due, is `unsolicited`.
    consumed consume(resp::value& value);

    /// The connection broke: finishes every entry, those written (or being written) with `sent`, the others
    /// with `unsent`.
    void fail_all(error_code sent, error_code unsent);

    bool has_waiting() const noexcept { return first_waiting_ < queue_.size(); }
    /// Entries written (or being written) whose replies have not all arrived, including abandoned ones.
    std::size_t awaiting_replies() const noexcept { return first_waiting_; }
    std::size_t size() const noexcept { return queue_.size(); }

private:
    void finish_front();
    // Takes the next reply or confirmation of the front entry.
    void take(exec_entry& entry, resp::value& value);

    std::deque<std::shared_ptr<exec_entry>> queue_;  // written/staged first, in write order, then waiting
    std::size_t first_waiting_ = 0;
    std::string write_buffer_;
};

}  // namespace redlock::detail
