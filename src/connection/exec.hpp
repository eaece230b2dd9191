// One async_exec (and async_subscribe / async_unsubscribe, which are execs with a pubsub_call): it waits in the
// multiplexer until its replies arrive and owns the caller's handler. Before its request is written any
// cancellation removes it; after, partial and terminal cancellation and its deadline abandon it (its reply is
// read and dropped, so later replies still reach their own requests). A script the node lost (NOSCRIPT) is sent
// again as EVAL.
#pragma once

#include "common/completion.hpp"
#include "connection/connection_impl.hpp"
#include "connection/multiplexer.hpp"

#include <redlock/diagnostics.hpp>
#include <redlock/request.hpp>
#include <redlock/response.hpp>

#include <boost/asio/cancellation_type.hpp>

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace redlock::detail {

/// One async_subscribe or async_unsubscribe: the request it sends and what to make of the outcome.
struct pubsub_call {
    bool subscribe;
    std::vector<std::string> channels;
    diagnostics* diag;
    request req;
    response resp;
    subscription_tracker::call order = 0;  // to apply its confirmations in stream order
    bool sharded = false;                  // `req` holds SSUBSCRIBE / SUNSUBSCRIBE rather than their classic kin

    /// (Re)writes `req` with the sharded or the classic command, as the server's version calls for.
    void build(bool sharded_commands);
};

// It holds its connection weakly: the connection holds it (in the multiplexer), and a cycle would leak both if
// the io_context were destroyed before the connection failed its requests.
class exec_op final : public exec_entry, public std::enable_shared_from_this<exec_op> {
public:
    exec_op(std::shared_ptr<connection_impl> conn, const request& req, response* resp, completion handler);
    exec_op(std::shared_ptr<connection_impl> conn, std::shared_ptr<pubsub_call> call, completion handler);
    ~exec_op() override;

    /// On the strand: checks the request and the connection, then queues it with its deadline.
    void start();
    void finish(error_code ec) override;
    void confirmed(const resp::value& push) override;
    /// A subscribe or unsubscribe takes the command of the server it is written to (connection_impl::server is
    /// that of the current session once the writer runs).
    void before_write() override;
    /// The request's deadline passed (the connection's deadline timer took it off its list).
    void on_deadline();

private:
    bool resend_missing_scripts();
    void on_cancel(boost::asio::cancellation_type_t type);
    void abandon(connection_impl& conn);
    void complete(error_code ec);
    error_code conclude_pubsub(error_code ec);

    std::weak_ptr<connection_impl> conn_;
    std::shared_ptr<pubsub_call> call_;  // set for async_subscribe / async_unsubscribe
    strand_type strand_;
    const request* request_;
    response* response_;
    response ignored_;
    pending_completion<> completion_;
    std::optional<connection_impl::deadline_entry> deadline_;  // on the connection's list while set
    request fallback_request_;
    response fallback_response_;
    std::vector<std::size_t> fallback_indexes_;
    bool done_ = false;
};

/// A request of the connection's own that nobody waits for (the health check's PING, SCRIPT LOAD): its reply is
/// read and dropped.
class detached_entry final : public exec_entry {
public:
    explicit detached_entry(std::shared_ptr<const request> req) : exec_entry(*req, nullptr), request_(std::move(req)) {}
    void finish(error_code) override {}

private:
    std::shared_ptr<const request> request_;
};

}  // namespace redlock::detail
