// Turns the bytes read from a socket into complete replies.
#pragma once

#include "resp/parser.hpp"

#include <redlock/resp/limits.hpp>
#include <redlock/resp/value.hpp>

#include <boost/system/error_code.hpp>

#include <cstddef>
#include <optional>
#include <span>
#include <string>

namespace redlock::resp {

/// Buffers socket bytes and yields one complete top-level value at a time.
///
///     auto space = reader.prepare(4096);
///     std::size_t n = co_await socket.async_read_some(asio::buffer(space.data(), space.size()), ...);
///     reader.commit(n);
///     while (auto v = reader.next(ec)) handle(*v);
///     if (ec) close the connection: the stream cannot be resynchronised.
class reader {
public:
    explicit reader(limits lim = {});

    /// Writable space of n bytes at the end of the buffer, for the next read. Valid until the next call.
    std::span<char> prepare(std::size_t n);

    /// n bytes (at most what prepare() offered) were written into the prepared space.
    void commit(std::size_t n) noexcept;

    /// The next complete value; nullopt when more bytes are needed (ec clear) or on a protocol error
    /// (ec set; the reader then keeps reporting it until reset()).
    std::optional<value> next(boost::system::error_code& ec);

    /// Drop every buffered byte, partial value and error (after a reconnect).
    void reset();

    /// Committed bytes not yet returned as values.
    std::size_t buffered() const noexcept { return size_ - offset_; }

private:
    void compact() noexcept;

    std::string buffer_;      // [offset_, size_) holds committed, unreturned bytes; the rest is prepared space
    std::size_t offset_ = 0;  // first byte of the current message
    std::size_t size_ = 0;    // end of the committed bytes
    parser parser_;
    value_builder builder_;
    boost::system::error_code error_;
};

}  // namespace redlock::resp
