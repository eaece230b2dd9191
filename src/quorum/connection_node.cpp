// The default node: one pipelined connection to one Redis server.
#include <redlock/connection.hpp>
#include <redlock/node.hpp>

#include <memory>

namespace redlock {
namespace {

class connection_node final : public node {
public:
    connection_node(const boost::asio::any_io_executor& ex, const node_config& config) : conn_(ex, config)
    {
        conn_.async_connect([](error_code) {});  // start now; it keeps reconnecting on its own
    }
    ~connection_node() override { conn_.close(); }

    std::string name() const override { return conn_.config().to_string(); }
    void async_connect(diagnostics& diag, completion handler) override
    {
        conn_.async_connect(diag, std::move(handler));
    }
    void async_exec(const request& req, response& resp, std::string_view, completion handler) override
    {
        conn_.async_exec(req, resp, std::move(handler));
    }
    void async_subscribe(std::vector<std::string> channels, diagnostics& diag, completion handler) override
    {
        conn_.async_subscribe(std::move(channels), diag, std::move(handler));
    }
    void async_unsubscribe(std::vector<std::string> channels, completion handler) override
    {
        conn_.async_unsubscribe(std::move(channels), std::move(handler));
    }
    void set_message_handler(message_handler handler) override { conn_.set_message_handler(std::move(handler)); }
    void set_tracking_handler(tracking_handler handler) override { conn_.set_tracking_handler(std::move(handler)); }
    server_identity server() const override { return conn_.server(); }
    usage get_usage() const override { return conn_.get_usage(); }
    void close() override { conn_.close(); }

private:
    connection conn_;
};

}  // namespace

std::unique_ptr<node> make_connection_node(const boost::asio::any_io_executor& ex, const node_config& config)
{
    return std::make_unique<connection_node>(ex, config);
}

}  // namespace redlock
