// The byte stream under a connection: TCP, TLS or a unix socket, or an in-memory stream in tests.
// Virtual so the connection is compiled once, whatever carries its bytes. Private to the library and its tests:
// make_connection is how a test puts a connection over a stream of its own.
#pragma once

#include <redlock/connection.hpp>
#include <redlock/diagnostics.hpp>
#include <redlock/error.hpp>
#include <redlock/node_config.hpp>

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/buffer.hpp>

#include <functional>
#include <memory>

namespace redlock::detail {

class transport {
public:
    using io_handler = boost::asio::any_completion_handler<void(error_code, std::size_t)>;
    using connect_handler = boost::asio::any_completion_handler<void(error_code)>;

    virtual ~transport() = default;
    /// Resolves, connects and (for TLS) handshakes. Details of a failure go to `diag`, which must outlive the op.
    virtual void connect(diagnostics& diag, connect_handler handler) = 0;
    virtual void read_some(boost::asio::mutable_buffer buffer, io_handler handler) = 0;
    /// Writes the whole buffer.
    virtual void write(boost::asio::const_buffer buffer, io_handler handler) = 0;
    /// Closes the stream; pending operations complete with operation_aborted.
    virtual void close() noexcept = 0;
};

/// Makes a fresh transport for each connection attempt, on the connection's strand.
using transport_factory = std::function<std::unique_ptr<transport>(boost::asio::any_io_executor)>;

/// TCP, TLS or unix socket, as the config says.
std::unique_ptr<transport> make_transport(boost::asio::any_io_executor ex, const node_config& config);

/// A connection whose every attempt runs over a stream `factory` makes (tests: an in-memory stream).
connection make_connection(boost::asio::any_io_executor ex, node_config config, transport_factory factory);

template <class Token>
auto async_connect(transport& t, diagnostics& diag, Token&& token)
{
    return boost::asio::async_initiate<Token, void(error_code)>(
        [&t, &diag](auto handler) { t.connect(diag, std::move(handler)); }, token);
}

template <class Token>
auto async_read_some(transport& t, boost::asio::mutable_buffer buffer, Token&& token)
{
    return boost::asio::async_initiate<Token, void(error_code, std::size_t)>(
        [&t](auto handler, boost::asio::mutable_buffer b) { t.read_some(b, std::move(handler)); }, token, buffer);
}

template <class Token>
auto async_write(transport& t, boost::asio::const_buffer buffer, Token&& token)
{
    return boost::asio::async_initiate<Token, void(error_code, std::size_t)>(
        [&t](auto handler, boost::asio::const_buffer b) { t.write(b, std::move(handler)); }, token, buffer);
}

}  // namespace redlock::detail
