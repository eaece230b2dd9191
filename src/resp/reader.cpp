#include "resp/reader.hpp"

#include <algorithm>
#include <string_view>

namespace redlock::resp {
namespace {

// A buffer grown beyond this by one large reply is released once it is empty.
constexpr std::size_t shrink_threshold = 1024 * 1024;

}  // namespace

reader::reader(limits lim) : parser_(lim) {}

std::span<char> reader::prepare(std::size_t n)
{
    compact();
    if (buffer_.size() < size_ + n) buffer_.resize(size_ + n);
    return {buffer_.data() + size_, n};
}

void reader::commit(std::size_t n) noexcept
{
    size_ = std::min(size_ + n, buffer_.size());
}

std::optional<value> reader::next(boost::system::error_code& ec)
{
    ec = error_;
    if (ec) return std::nullopt;
    for (;;) {
        // The parser resumes where it stopped: it is given the whole message so far, never re-parses it.
        const std::string_view message(buffer_.data() + offset_, size_ - offset_);
        const auto n = parser_.consume(message, ec);
        if (ec) {
            error_ = ec;
            return std::nullopt;
        }
        if (!n) return std::nullopt;
        builder_.on_node(*n);
        if (parser_.done()) {
            offset_ += parser_.consumed();
            parser_.reset();
            if (offset_ == size_) {
                offset_ = size_ = 0;
                if (buffer_.capacity() > shrink_threshold) std::string().swap(buffer_);  // after one huge reply
            }
            return builder_.take();
        }
    }
}

// Several replies often arrive in one read: move the rest down only once the consumed part is the larger half.
void reader::compact() noexcept
{
    if (offset_ == 0 || offset_ < size_ - offset_) return;
    std::copy(buffer_.begin() + static_cast<std::ptrdiff_t>(offset_),
              buffer_.begin() + static_cast<std::ptrdiff_t>(size_), buffer_.begin());
    size_ -= offset_;
    offset_ = 0;
}

void reader::reset()
{
    buffer_.clear();
    offset_ = size_ = 0;
    parser_.reset();
    builder_.reset();
    error_ = {};
}

}  // namespace redlock::resp
