#include "connection/multiplexer.hpp"

#include <algorithm>

namespace redlock::detail {

void multiplexer::add(std::shared_ptr<exec_entry> entry)
{
    entry->status_ = exec_entry::status::waiting;
    entry->abandoned_ = false;
    entry->remaining_ = entry->request_->expected_replies();
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
    // Requests that expect no reply are done once written; they can only be finished from the front, in
    // order, or a later reply would be matched to them.
    while (!queue_.empty() && first_waiting_ > 0 && queue_.front()->status_ == exec_entry::status::written &&
           queue_.front()->remaining_ == 0) {
        finish_front();
    }
}

multiplexer::consumed multiplexer::consume(resp::value& value)
{
    if (value.data_type == resp::type::push) return consumed::push;
    // Skip over entries that expect no reply, which precede this reply's owner.
    while (first_waiting_ > 0 && queue_.front()->remaining_ == 0) finish_front();
    if (first_waiting_ == 0) return consumed::unsolicited;

    auto& entry = *queue_.front();
    if (entry.response_ != nullptr) entry.response_->push_back(std::move(value));
    if (--entry.remaining_ == 0) finish_front();
    return consumed::reply;
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
