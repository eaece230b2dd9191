#include "connection/multiplexer.hpp"

#include <algorithm>

namespace redlock::detail {

void multiplexer::add(std::shared_ptr<exec_entry> entry)
{
    entry->status_ = exec_entry::status::waiting;
    entry->abandoned_ = false;
    queue_.push_back(std::move(entry));
}

bool multiplexer::remove(const exec_entry& entry)
{
    if (entry.status_ != exec_entry::status::waiting) return false;
    auto it = std::find_if(queue_.begin() + static_cast<std::ptrdiff_t>(first_waiting_), queue_.end(),
                           [&](const auto& e) { return e.get() == &entry; });
    if (it == queue_.end()) return false;
    queue_.erase(it);
    return true;
}

void multiplexer::abandon(exec_entry& entry) noexcept
{
    entry.abandoned_ = true;
    entry.response_ = nullptr;
    entry.request_ = nullptr;
}

std::string_view multiplexer::prepare_write()
{
    write_buffer_.clear();
    for (std::size_t i = first_waiting_; i < queue_.size(); ++i) {
        auto& entry = *queue_[i];
        entry.before_write();
        // Counted now, from the request as written (before_write may have changed it).
        entry.remaining_ = entry.request_->expected_replies();
        entry.next_reply_ = 0;
        entry.confirmed_ = entry.request_->confirmed_commands();
        write_buffer_ += entry.request_->payload();
        entry.status_ = exec_entry::status::staged;
    }
    first_waiting_ = queue_.size();
    return write_buffer_;
}

void multiplexer::commit_write()
{
    for (std::size_t i = 0; i < first_waiting_; ++i) {
        if (queue_[i]->status_ == exec_entry::status::staged) queue_[i]->status_ = exec_entry::status::written;
    }
    // A request expecting no reply (none does today) is done once written; it can only be finished from the
    // front, in order, or a later reply would be matched to it.
    while (!queue_.empty() && first_waiting_ > 0 && queue_.front()->status_ == exec_entry::status::written &&
           queue_.front()->remaining_ == 0) {
        finish_front();
    }
}

namespace {
// The SUBSCRIBE-family command whose confirmation `entry`'s next reply is, if any.
const request::confirmed_command* due_confirmation(const std::vector<request::confirmed_command>& commands,
                                                   std::size_t next_reply) noexcept
{
    for (const auto& c : commands) {
        if (next_reply >= c.first_reply && next_reply < c.first_reply + c.confirmations) return &c;
    }
    return nullptr;
}

// `push`, a sunsubscribe, confirms the channel the SUNSUBSCRIBE `due` expects next (or `due` cannot tell: a command
// without channels, answered by an error).
bool confirms_due_channel(const request::confirmed_command& due, std::size_t next_reply, const resp::value& push)
{
    if (due.kind != pubsub_kind::sunsubscribe) return false;
    const std::size_t place = next_reply - due.first_reply;
    return place >= due.channels.size() || due.channels[place] == push.elements[1].text;
}

}  // namespace

std::optional<pubsub_kind> confirmation_kind(const resp::value& push) noexcept
{
    if (push.data_type != resp::type::push) return std::nullopt;
    if (push.elements.size() != 3 || push.elements[0].is_aggregate()) return std::nullopt;
    const std::string_view name = push.elements[0].text;
    // Lower case on the wire; pubsub_kind_of accepts any case, and command names are upper case.
    if (name.empty() || name[0] < 'a' || name[0] > 'z') return std::nullopt;
    return pubsub_kind_of(name);
}

multiplexer::consumed multiplexer::consume(resp::value& value)
{
    // Skip over entries that expect no reply, which precede this reply's owner.
    while (first_waiting_ > 0 && queue_.front()->remaining_ == 0) finish_front();
    const auto* front = first_waiting_ > 0 ? queue_.front().get() : nullptr;
    const auto* due = front ? due_confirmation(front->confirmed_, front->next_reply_) : nullptr;

    if (value.data_type == resp::type::push) {
        auto kind = confirmation_kind(value);
        if (!kind) return consumed::push;
        if (*kind == pubsub_kind::sunsubscribe &&
            (due == nullptr || !confirms_due_channel(*due, front->next_reply_, value)))
            return consumed::push;
        if (due == nullptr || due->kind != *kind) return consumed::unsolicited;
        queue_.front()->confirmed(value);
        take(*queue_.front(), value);
        return consumed::confirmation;
    }
    if (front == nullptr) return consumed::unsolicited;
    if (due == nullptr) {
        take(*queue_.front(), value);
        return consumed::reply;
    }
    if (!value.is_error()) return consumed::unsolicited;  // a confirmation was due
    // One error for the whole command (ACL, arity): it fills each of the command's remaining places.
    auto& entry = *queue_.front();
    const std::size_t places = due->first_reply + due->confirmations - entry.next_reply_;
    for (std::size_t i = 1; i < places; ++i) {
        if (entry.response_ != nullptr) entry.response_->push_back(value);
        ++entry.next_reply_;
        --entry.remaining_;
    }
    take(entry, value);
    return consumed::reply;
}

void multiplexer::take(exec_entry& entry, resp::value& value)
{
    if (entry.response_ != nullptr) entry.response_->push_back(std::move(value));
    ++entry.next_reply_;
    if (--entry.remaining_ == 0) finish_front();
}

void multiplexer::finish_front()
{
    auto entry = std::move(queue_.front());
    queue_.pop_front();
    --first_waiting_;
    entry->status_ = exec_entry::status::done;
    if (!entry->abandoned_) entry->finish({});
}

void multiplexer::fail_all(error_code sent, error_code unsent)
{
    auto entries = std::move(queue_);
    queue_.clear();
    first_waiting_ = 0;
    for (auto& entry : entries) {
        const bool written = entry->status_ != exec_entry::status::waiting;
        entry->status_ = exec_entry::status::done;
        if (!entry->abandoned_) entry->finish(written ? sent : unsent);
    }
}

}  // namespace redlock::detail
