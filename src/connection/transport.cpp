#include "connection/transport.hpp"

#include <redlock/detail/access.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <optional>

namespace redlock::detail {
namespace {

namespace asio = boost::asio;
using asio::ip::tcp;
constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);

std::string endpoint_text(const node_config& config)
{
    return config.kind == node_config::transport::unix_socket ? config.path
                                                              : config.host + ":" + std::to_string(config.port);
}

// Resolves and connects a TCP socket; on failure writes what happened into `diag`.
asio::awaitable<error_code> connect_tcp(tcp::socket& socket, const node_config& config, diagnostics& diag)
{
    tcp::resolver resolver(socket.get_executor());
    auto [rec, endpoints] = co_await resolver.async_resolve(config.host, std::to_string(config.port), use_tuple);
    if (rec) {
        detail::access::set_client_message(diag, "cannot resolve " + config.host + ": " + rec.message());
        co_return rec;
    }
    auto [cec, endpoint] = co_await asio::async_connect(socket, endpoints, use_tuple);
    if (cec) {
        detail::access::set_client_message(diag, "cannot connect to " + endpoint_text(config) + ": " + cec.message());
        co_return cec;
    }
    socket.set_option(tcp::no_delay(true));
    co_return error_code{};
}

void complete_on_strand(asio::any_io_executor ex, asio::awaitable<error_code> op, transport::connect_handler handler)
{
    asio::co_spawn(ex, std::move(op), [handler = std::move(handler)](std::exception_ptr ep, error_code ec) mutable {
        if (ep) ec = make_error_code(error::closed);  // only close() during connect can throw here
        std::move(handler)(ec);
    });
}

class tcp_transport final : public transport {
public:
    tcp_transport(asio::any_io_executor ex, node_config config) : socket_(ex), config_(std::move(config)) {}

    void connect(diagnostics& diag, connect_handler handler) override
    {
        complete_on_strand(socket_.get_executor(), connect_tcp(socket_, config_, diag), std::move(handler));
    }
    void read_some(asio::mutable_buffer buffer, io_handler handler) override
    {
        socket_.async_read_some(buffer, std::move(handler));
    }
    void write(asio::const_buffer buffer, io_handler handler) override
    {
        asio::async_write(socket_, buffer, std::move(handler));
    }
    void close() noexcept override
    {
        error_code ignored;
        socket_.shutdown(tcp::socket::shutdown_both, ignored);
        socket_.close(ignored);
    }

private:
    tcp::socket socket_;
    node_config config_;
};

class unix_transport final : public transport {
public:
    unix_transport(asio::any_io_executor ex, node_config config) : socket_(ex), config_(std::move(config)) {}

    void connect(diagnostics& diag, connect_handler handler) override
    {
        complete_on_strand(socket_.get_executor(), connect_unix(diag), std::move(handler));
    }
    void read_some(asio::mutable_buffer buffer, io_handler handler) override
    {
        socket_.async_read_some(buffer, std::move(handler));
    }
    void write(asio::const_buffer buffer, io_handler handler) override
    {
        asio::async_write(socket_, buffer, std::move(handler));
    }
    void close() noexcept override
    {
        error_code ignored;
        socket_.close(ignored);
    }

private:
    asio::awaitable<error_code> connect_unix(diagnostics& diag)
    {
        auto [ec] = co_await socket_.async_connect(asio::local::stream_protocol::endpoint(config_.path), use_tuple);
        if (ec) detail::access::set_client_message(diag, "cannot connect to " + config_.path + ": " + ec.message());
        co_return ec;
    }

    asio::local::stream_protocol::socket socket_;
    node_config config_;
};

class tls_transport final : public transport {
public:
    tls_transport(asio::any_io_executor ex, node_config config)
        : context_(asio::ssl::context::tls_client), config_(std::move(config))
    {
        context_.set_options(asio::ssl::context::default_workarounds | asio::ssl::context::no_sslv2 |
                                 asio::ssl::context::no_sslv3 | asio::ssl::context::no_tlsv1 |
                                 asio::ssl::context::no_tlsv1_1,
                             setup_error_);
        if (!setup_error_) {
            if (config_.tls.ca_file.empty())
                context_.set_default_verify_paths(setup_error_);
            else
                context_.load_verify_file(config_.tls.ca_file, setup_error_);
            if (setup_error_) setup_problem_ = "cannot load CA file '" + config_.tls.ca_file + "'";
        }
        if (!setup_error_ && !config_.tls.cert_file.empty()) {
            context_.use_certificate_chain_file(config_.tls.cert_file, setup_error_);
            if (setup_error_) setup_problem_ = "cannot load certificate '" + config_.tls.cert_file + "'";
        }
        if (!setup_error_ && !config_.tls.key_file.empty()) {
            context_.use_private_key_file(config_.tls.key_file, asio::ssl::context::pem, setup_error_);
            if (setup_error_) setup_problem_ = "cannot load private key '" + config_.tls.key_file + "'";
        }
        stream_.emplace(ex, context_);
    }

    void connect(diagnostics& diag, connect_handler handler) override
    {
        complete_on_strand(stream_->get_executor(), connect_tls(diag), std::move(handler));
    }
    void read_some(asio::mutable_buffer buffer, io_handler handler) override
    {
        stream_->async_read_some(buffer, std::move(handler));
    }
    void write(asio::const_buffer buffer, io_handler handler) override
    {
        asio::async_write(*stream_, buffer, std::move(handler));
    }
    void close() noexcept override
    {
        error_code ignored;
        stream_->lowest_layer().shutdown(tcp::socket::shutdown_both, ignored);
        stream_->lowest_layer().close(ignored);
    }

private:
    asio::awaitable<error_code> connect_tls(diagnostics& diag)
    {
        if (setup_error_) {
            detail::access::set_client_message(diag, setup_problem_ + ": " + setup_error_.message());
            co_return make_error_code(error::tls_error);
        }
        if (auto ec = co_await connect_tcp(stream_->next_layer(), config_, diag)) co_return ec;

        const std::string& name = config_.tls.server_name.empty() ? config_.host : config_.tls.server_name;
        if (config_.tls.verify_peer) {
            stream_->set_verify_mode(asio::ssl::verify_peer);
            stream_->set_verify_callback(asio::ssl::host_name_verification(name));
        } else {
            stream_->set_verify_mode(asio::ssl::verify_none);
        }
        error_code address_check;
        asio::ip::make_address(name, address_check);
        if (address_check) SSL_set_tlsext_host_name(stream_->native_handle(), name.c_str());  // SNI for names only

        auto [ec] = co_await stream_->async_handshake(asio::ssl::stream_base::client, use_tuple);
        if (ec) {
            std::string detail = ec.message();
            if (long verify = SSL_get_verify_result(stream_->native_handle()); verify != X509_V_OK)
                detail += std::string(" (") + X509_verify_cert_error_string(verify) + ")";
            detail::access::set_client_message(diag,
                                               "TLS handshake with " + endpoint_text(config_) + " failed: " + detail);
            co_return make_error_code(error::tls_error);
        }
        co_return error_code{};
    }

    asio::ssl::context context_;
    node_config config_;
    error_code setup_error_;
    std::string setup_problem_;
    std::optional<asio::ssl::stream<tcp::socket>> stream_;
};

}  // namespace

std::unique_ptr<transport> make_transport(asio::any_io_executor ex, const node_config& config)
{
    switch (config.kind) {
        case node_config::transport::tls:
            return std::make_unique<tls_transport>(std::move(ex), config);
        case node_config::transport::unix_socket:
            return std::make_unique<unix_transport>(std::move(ex), config);
        case node_config::transport::tcp:
            break;
    }
    return std::make_unique<tcp_transport>(std::move(ex), config);
}

}  // namespace redlock::detail
