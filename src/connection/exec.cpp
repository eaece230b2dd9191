#include "connection/exec.hpp"

#include <redlock/detail/access.hpp>

#include <boost/asio/dispatch.hpp>

#include <algorithm>

namespace redlock::detail {

namespace asio = boost::asio;

exec_op::exec_op(std::shared_ptr<connection_impl> conn, const request& req, response* resp, completion handler)
    : exec_entry(req, resp != nullptr ? resp : &ignored_),
      conn_(conn),
      strand_(conn->strand()),
      request_(&req),
      response_(resp != nullptr ? resp : &ignored_),
      completion_(std::move(handler), conn->io_executor())
{}

exec_op::exec_op(std::shared_ptr<connection_impl> conn, std::shared_ptr<pubsub_call> call, completion handler)
    : exec_op(std::move(conn), call->req, &call->resp, std::move(handler))
{
    call_ = std::move(call);
}

exec_op::~exec_op()
{
    if (!deadline_) return;
    if (auto conn = conn_.lock()) conn->remove_deadline(*deadline_);
}

void exec_op::start()
{
    response_->clear();
    response_->reserve(request_->expected_replies());  // one allocation, not one per growth
    auto conn = conn_.lock();
    if (!conn) return complete(error::closed);
    if (call_ && !call_->channels.empty()) {
        auto& subscriptions = conn->subscriptions();
        call_->order =
            call_->subscribe ? subscriptions.subscribe_called() : subscriptions.unsubscribe_called(call_->channels);
    }
    const auto state = conn->state();
    if (state == connection_state::closed) return complete(error::closed);
    if (request_->empty() || !request_->countable() || (call_ && call_->channels.empty()))
        return complete(error::invalid_argument);
    if (state != connection_state::connected && state != connection_state::connecting)
        return complete(error::not_connected);

    if (auto slot = completion_.slot(); slot.is_connected()) {
        slot.assign([weak = weak_from_this(), strand = strand_](asio::cancellation_type_t type) {
            asio::dispatch(strand, [weak, type] {
                if (auto self = weak.lock()) self->on_cancel(type);
            });
        });
    }
    auto timeout = request_->timeout().count() > 0 ? request_->timeout() : conn->config().request_timeout;
    deadline_ = conn->add_deadline(clock::now() + timeout, this);
    conn->load_scripts(*request_);
    conn->submit(shared_from_this());
}

void exec_op::finish(error_code ec)
{
    if (done_) return;
    if (ec) return complete(ec);
    if (resend_missing_scripts()) return;
    for (std::size_t i = 0; i < fallback_indexes_.size(); ++i)
        (*response_)[fallback_indexes_[i]] = std::move(fallback_response_[i]);
    const bool any_error = std::any_of(response_->begin(), response_->end(), [](auto& v) { return v.is_error(); });
    complete(any_error ? make_error_code(error::server_error) : error_code{});
}

void exec_op::before_write()
{
    if (!call_ || call_->channels.empty()) return;
    auto conn = conn_.lock();
    if (!conn) return;
    const bool sharded = conn->server().has_sharded_pubsub();
    if (sharded != call_->sharded) call_->build(sharded);
}

void pubsub_call::build(bool sharded_commands)
{
    sharded = sharded_commands;
    req.clear();
    if (channels.empty()) return;
    if (subscribe)
        req.push_range(sharded ? "SSUBSCRIBE" : "SUBSCRIBE", channels);
    else
        req.push_range(sharded ? "SUNSUBSCRIBE" : "UNSUBSCRIBE", channels);
}

void exec_op::confirmed(const resp::value& push)
{
    if (!call_ || push.elements.size() < 2) return;
    if (auto conn = conn_.lock())
        conn->subscriptions().confirmed(call_->order, call_->subscribe, push.elements[1].text);
}

// The node lost its script cache (restart, SCRIPT FLUSH): send the scripts that failed again as EVAL. Such a
// command did not run, so sending it again is safe.
bool exec_op::resend_missing_scripts()
{
    if (!fallback_indexes_.empty()) return false;  // at most once
    std::vector<const request::script_call*> calls;
    for (const auto& call : request_->script_calls()) {
        const auto& reply = (*response_)[call.reply_index];
        if (reply.is_error() && reply.error_text().starts_with("NOSCRIPT")) {
            calls.push_back(&call);
            fallback_indexes_.push_back(call.reply_index);
        }
    }
    if (calls.empty()) return false;
    // A WAIT after a script that did not run acknowledged writes before it, not the script's: it waits again.
    std::vector<const request::wait_call*> waits;
    for (const auto& wait : request_->wait_calls()) {
        if (wait.reply_index < fallback_indexes_.front()) continue;
        waits.push_back(&wait);
        fallback_indexes_.push_back(wait.reply_index);
    }
    fallback_request_ = request_->eval_fallback(calls, waits);
    reuse(fallback_request_, &fallback_response_);
    auto conn = conn_.lock();
    const auto state = conn ? conn->state() : connection_state::closed;
    if (state != connection_state::connected && state != connection_state::connecting) {
        complete(error::not_connected);
    } else {
        conn->submit(shared_from_this());
    }
    return true;
}

void exec_op::on_cancel(asio::cancellation_type_t type)
{
    if (done_) return;
    auto conn = conn_.lock();
    if (!conn || conn->mpx().remove(*this)) return complete(asio::error::operation_aborted);
    if ((type & (asio::cancellation_type::terminal | asio::cancellation_type::partial)) ==
        asio::cancellation_type::none)
        return;  // total cancellation cannot unsend a written request
    abandon(*conn);
    complete(asio::error::operation_aborted);
}

void exec_op::on_deadline()
{
    deadline_.reset();
    if (done_) return;
    auto conn = conn_.lock();
    if (conn && !conn->mpx().remove(*this)) abandon(*conn);
    complete(error::timeout);
}

void exec_op::abandon(connection_impl& conn)
{
    conn.mpx().abandon(*this);
    atomic_usage::add(conn.stats().abandoned);
}

void exec_op::complete(error_code ec)
{
    if (call_) ec = conclude_pubsub(ec);
    done_ = true;
    if (deadline_) {
        if (auto conn = conn_.lock()) conn->remove_deadline(*deadline_);
        deadline_.reset();
    }
    completion_.complete(ec);
}

// The outcome of async_subscribe / async_unsubscribe: a refusal's text goes to the caller's diagnostics.
error_code exec_op::conclude_pubsub(error_code ec)
{
    auto* diag = call_->diag;
    if (diag) diag->clear();
    if (ec != error::server_error) return ec;
    std::size_t refused = 0;
    for (const auto& v : *response_) {
        if (!v.is_error()) continue;
        if (refused++ == 0 && diag) access::set_server_message(*diag, std::string(v.error_text()));
    }
    if (call_->subscribe) {
        if (auto conn = conn_.lock()) atomic_usage::add(conn->stats().subscribe_refusals, refused);
    }
    return ec;
}

void connection_impl::submit(std::shared_ptr<exec_entry> entry)
{
    mpx_.add(std::move(entry));
    writer_wakeup_.cancel();
}

// A NOSCRIPT fallback would re-send the script after requests queued since, out of order (a release could run
// before the acquire it follows); loading first leaves that only to a SCRIPT FLUSH at run time.
void connection_impl::load_scripts(const request& req)
{
    for (const auto& call : req.script_calls()) {
        if (!loaded_scripts_.insert(call.code.sha1()).second) continue;
        auto load = std::make_shared<request>();
        load->push("SCRIPT", "LOAD", call.code.source());
        submit(std::make_shared<detached_entry>(std::move(load)));
    }
}

void start_exec(const std::shared_ptr<connection_impl>& impl, const request& req, response* resp, completion handler)
{
    auto op = std::make_shared<exec_op>(impl, req, resp, std::move(handler));
    asio::dispatch(impl->strand(), [op] { op->start(); });
}

void start_pubsub(const std::shared_ptr<connection_impl>& impl, bool subscribe, std::vector<std::string> channels,
                  diagnostics* diag, completion handler)
{
    auto call = std::make_shared<pubsub_call>();
    call->subscribe = subscribe;
    call->channels = std::move(channels);
    call->diag = diag;
    call->build(impl->server().has_sharded_pubsub());  // the last session's guess; before_write checks it
    auto op = std::make_shared<exec_op>(impl, std::move(call), std::move(handler));
    asio::dispatch(impl->strand(), [op] { op->start(); });
}

}  // namespace redlock::detail
