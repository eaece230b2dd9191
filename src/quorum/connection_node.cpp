// The default node: one pipelined connection to one Redis server.
#include <redlock/connection.hpp>
#include <redlock/node.hpp>

#include <boost/asio/consign.hpp>

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
    void async_subscribe(std::vector<std::string> channels, diagnostics&, completion handler) override
    {
        auto req = std::make_shared<request>();
        req->push_range("SUBSCRIBE", channels);
        conn_.async_exec(*req, boost::asio::consign(std::move(handler), req));  // keeps the handler's executor
    }
    void async_unsubscribe(std::vector<std::string> channels, completion handler) override
    {
        auto req = std::make_shared<request>();
        req->push_range("UNSUBSCRIBE", channels);
        conn_.async_exec(*req, boost::asio::consign(std::move(handler), req));  // keeps the handler's executor
    }
    void set_message_handler(message_handler handler) override
    {
        conn_.set_push_handler([h = std::move(handler)](const resp::value& push) {
            // RESP3 pub/sub message: ["message", channel, payload]; confirmations and others are ignored.
            if (push.elements.size() == 3 && push.elements[0].text == "message")
                h(push.elements[1].text, push.elements[2].text);
        });
    }
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
