#include "common/completion.hpp"
#include "common/waiter_list.hpp"
#include "connection/multiplexer.hpp"
#include "connection/server_version.hpp"
#include "connection/transport.hpp"

#include <redlock/connection.hpp>
#include <redlock/detail/access.hpp>
#include "resp/reader.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>
#include <atomic>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <unordered_map>
#include <unordered_set>

namespace redlock {
namespace detail {

namespace asio = boost::asio;
using clock = std::chrono::steady_clock;
constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);

struct atomic_usage {
    std::atomic<std::uint64_t> writes{0}, bytes_written{0}, bytes_read{0}, requests{0}, replies{0}, pushes{0},
        abandoned{0}, connects{0}, disconnects{0}, resubscribes{0}, subscribe_refusals{0};
};

// One async_subscribe or async_unsubscribe: the request it sends and what to make of the outcome.
struct pubsub_call {
    bool subscribe;
    std::vector<std::string> channels;
    diagnostics* diag;
    request req;
    response resp;
    std::uint64_t intent = 0;  // order of the calls, to apply their confirmations in stream order
};

class exec_op;

class connection_impl : public std::enable_shared_from_this<connection_impl> {
public:
    connection_impl(asio::any_io_executor ex, node_config config, transport_factory factory)
        : io_executor_(ex),
          strand_(make_strand_of(ex)),
          config_(std::move(config)),
          factory_(std::move(factory)),
          reader_(config_.limits),
          writer_wakeup_(strand_),
          health_timer_(strand_),
          backoff_timer_(strand_),
          connect_timer_(strand_),
          deadline_timer_(strand_),
          connect_waiters_(strand_, asio::cancellation_type::terminal)
    {}

    strand_type& strand() noexcept { return strand_; }
    const asio::any_io_executor& io_executor() const noexcept { return io_executor_; }
    const node_config& config() const noexcept { return config_; }
    connection_state state() const noexcept { return state_.load(std::memory_order_relaxed); }
    std::uint32_t server_version() const noexcept { return server_version_.load(std::memory_order_relaxed); }
    atomic_usage& stats() noexcept { return stats_; }
    multiplexer& mpx() noexcept { return mpx_; }

    void start_connect(diagnostics* diag, completion handler);
    void close();
    void set_push_handler(std::function<void(const resp::value&)> handler)
    {
        asio::dispatch(strand_, [self = shared_from_this(), h = std::move(handler)]() mutable {
            self->push_handler_ = std::move(h);
        });
    }
    void set_message_handler(std::function<void(std::string_view, std::string_view)> handler)
    {
        asio::dispatch(strand_, [self = shared_from_this(), h = std::move(handler)]() mutable {
            self->message_handler_ = std::move(h);
        });
    }

    // The deadlines of the requests in flight (on the strand): one timer for all of them, not one per request.
    using deadline_entry = std::multimap<clock::time_point, exec_op*>::iterator;
    deadline_entry add_deadline(clock::time_point at, exec_op* op);
    void remove_deadline(deadline_entry e)
    {
        deadlines_.erase(e);
        if (deadlines_.empty()) {  // no timer left to keep the io_context running
            deadline_timer_.cancel();
            deadline_armed_ = clock::time_point::max();
        }
    }

    // Queues an entry for the writer (on the strand).
    void submit(std::shared_ptr<exec_entry> entry)
    {
        mpx_.add(std::move(entry));
        writer_wakeup_.cancel();
    }

    // Pipelines SCRIPT LOAD ahead of the first EVALSHA of each script in this connection session. A NOSCRIPT
    // fallback would re-send the script after requests queued since, out of order (a release could run
    // before the acquire it follows); loading first leaves that only to a SCRIPT FLUSH at run time.
    void load_scripts(const request& req);

    // Subscriptions. An async_subscribe's channels are remembered when their confirmations arrive, unless an
    // async_unsubscribe of the channel was called after it; async_unsubscribe forgets at once.
    void begin_pubsub(pubsub_call& call);
    void note_confirmation(const pubsub_call& call, const resp::value& push);

private:
    static asio::awaitable<void> run(std::shared_ptr<connection_impl> self) { co_await self->run_loop(); }
    asio::awaitable<void> run_loop();
    asio::awaitable<error_code> connect_once(diagnostics& diag);
    asio::awaitable<error_code> handshake(diagnostics& diag);
    asio::awaitable<error_code> restore_subscriptions(diagnostics& diag);
    asio::awaitable<error_code> read_replies(std::size_t count, response& out, diagnostics& diag);
    asio::awaitable<error_code> reader_loop();
    asio::awaitable<error_code> writer_loop();
    asio::awaitable<error_code> health_loop();
    error_code stop_serving(error_code why) noexcept
    {
        transport_->close();
        return why;
    }
    void on_value(resp::value& value, error_code& ec);
    void deliver_push(const resp::value& push);
    void notify_connect_waiters(error_code ec, const diagnostics& diag);
    void set_state(connection_state s) noexcept { state_.store(s, std::memory_order_relaxed); }
    std::chrono::milliseconds next_backoff();

    asio::any_io_executor io_executor_;
    strand_type strand_;
    node_config config_;
    transport_factory factory_;
    std::unique_ptr<transport> transport_;
    multiplexer mpx_;
    resp::reader reader_;
    std::atomic<connection_state> state_{connection_state::idle};
    std::atomic<std::uint32_t> server_version_{0};  // of the last handshake
    asio::steady_timer writer_wakeup_;              // a condition variable: cancelled when there is something to write
    asio::steady_timer health_timer_;
    asio::steady_timer backoff_timer_;
    asio::steady_timer connect_timer_;
    asio::steady_timer deadline_timer_;
    std::multimap<clock::time_point, exec_op*> deadlines_;
    clock::time_point deadline_armed_ = clock::time_point::max();
    void arm_deadline_timer();
    void on_deadline_timer();
    std::uint64_t connect_generation_ = 0;
    bool connect_timed_out_ = false;
    waiter_list<> connect_waiters_;  // async_connect calls waiting for the end of an attempt
    std::unordered_set<std::string> loaded_scripts_;  // SHAs loaded in this connection session
    std::function<void(const resp::value&)> push_handler_;
    std::function<void(std::string_view, std::string_view)> message_handler_;
    std::set<std::string> subscribed_;                          // confirmed channels, restored on reconnect
    std::unordered_map<std::string, std::uint64_t> forgotten_;  // channel -> intent of its latest unsubscribe
    std::uint64_t intents_ = 0;
    clock::time_point last_write_{};
    clock::time_point waiting_since_{};  // last progress while replies are outstanding
    std::chrono::milliseconds backoff_{0};
    std::minstd_rand jitter_{std::random_device{}()};
    atomic_usage stats_;
};

// One async_exec: lives in the multiplexer until its replies arrive, and owns the caller's handler. It holds
// its connection weakly: the connection holds it (in the multiplexer), and a cycle would leak both if the
// io_context were destroyed before the connection failed its requests.
class exec_op final : public exec_entry, public std::enable_shared_from_this<exec_op> {
public:
    exec_op(std::shared_ptr<connection_impl> conn, const request& req, response* resp, completion handler)
        : exec_entry(req, resp != nullptr ? resp : &ignored_),
          conn_(conn),
          strand_(conn->strand()),
          request_(&req),
          response_(resp != nullptr ? resp : &ignored_),
          completion_(std::move(handler), conn->io_executor())
    {}
    ~exec_op() override
    {
        if (!deadline_) return;
        if (auto conn = conn_.lock()) conn->remove_deadline(*deadline_);
    }
    exec_op(std::shared_ptr<connection_impl> conn, std::shared_ptr<pubsub_call> call, completion handler)
        : exec_op(std::move(conn), call->req, &call->resp, std::move(handler))
    {
        call_ = std::move(call);
    }

    void start()
    {
        response_->clear();
        auto conn = conn_.lock();
        if (!conn) return complete(error::closed);
        if (call_ && !call_->channels.empty()) conn->begin_pubsub(*call_);
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

    void finish(error_code ec) override
    {
        if (done_) return;
        if (ec) return complete(ec);
        if (resend_missing_scripts()) return;
        if (!fallback_indexes_.empty()) {
            for (std::size_t i = 0; i < fallback_indexes_.size(); ++i)
                (*response_)[fallback_indexes_[i]] = std::move(fallback_response_[i]);
        }
        const bool any_error = std::any_of(response_->begin(), response_->end(), [](auto& v) { return v.is_error(); });
        complete(any_error ? make_error_code(error::server_error) : error_code{});
    }

    void confirmed(const resp::value& push) override
    {
        if (!call_) return;
        if (auto conn = conn_.lock()) conn->note_confirmation(*call_, push);
    }

private:
    // The node lost its script cache (restart, SCRIPT FLUSH): send the scripts that failed again as EVAL. Such
    // a command did not run, so sending it again is safe.
    bool resend_missing_scripts()
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
        fallback_request_ = request::eval_fallback(calls);
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

    void on_cancel(asio::cancellation_type_t type)
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

public:
    // The request's deadline passed (called by the connection's deadline timer).
    void on_deadline()
    {
        deadline_.reset();  // the connection took it off its list
        if (done_) return;
        auto conn = conn_.lock();
        if (conn && !conn->mpx().remove(*this)) abandon(*conn);
        complete(error::timeout);
    }

private:
    void abandon(connection_impl& conn)
    {
        conn.mpx().abandon(*this);
        conn.stats().abandoned.fetch_add(1, std::memory_order_relaxed);
    }

    void complete(error_code ec)
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
    error_code conclude_pubsub(error_code ec)
    {
        auto* diag = call_->diag;
        if (diag) diag->clear();
        if (ec != error::server_error) return ec;
        std::size_t refused = 0;
        for (const auto& v : *response_) {
            if (!v.is_error()) continue;
            if (refused++ == 0 && diag) detail::access::set_server_message(*diag, std::string(v.error_text()));
        }
        if (call_->subscribe) {
            if (auto conn = conn_.lock())
                conn->stats().subscribe_refusals.fetch_add(refused, std::memory_order_relaxed);
        }
        return ec;
    }

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

// A request of the connection's own that nobody waits for (the health check's PING, SCRIPT LOAD): its reply
// is read and dropped.
class detached_entry final : public exec_entry {
public:
    explicit detached_entry(std::shared_ptr<const request> req) : exec_entry(*req, nullptr), request_(std::move(req)) {}
    void finish(error_code) override {}

private:
    std::shared_ptr<const request> request_;
};

std::shared_ptr<const request> ping()
{
    static const auto ping = [] {
        auto r = std::make_shared<request>();
        r->push("PING");
        return r;
    }();
    return ping;
}

void connection_impl::begin_pubsub(pubsub_call& call)
{
    call.intent = ++intents_;
    if (call.subscribe) return;
    for (const auto& channel : call.channels) {
        subscribed_.erase(channel);
        forgotten_[channel] = call.intent;
    }
}

void connection_impl::note_confirmation(const pubsub_call& call, const resp::value& push)
{
    if (push.elements.size() < 2) return;
    const std::string& channel = push.elements[1].text;
    auto forgotten = forgotten_.find(channel);
    if (call.subscribe) {
        // A SUBSCRIBE confirmed after a later UNSUBSCRIBE was called: that UNSUBSCRIBE follows it on the wire.
        if (forgotten == forgotten_.end() || forgotten->second < call.intent) subscribed_.insert(channel);
    } else if (forgotten != forgotten_.end() && forgotten->second == call.intent) {
        forgotten_.erase(forgotten);
    }
}

void connection_impl::load_scripts(const request& req)
{
    for (const auto& call : req.script_calls()) {
        if (!loaded_scripts_.insert(call.code.sha1()).second) continue;
        auto load = std::make_shared<request>();
        load->push("SCRIPT", "LOAD", call.code.source());
        submit(std::make_shared<detached_entry>(std::move(load)));
    }
}

void connection_impl::start_connect(diagnostics* diag, completion handler)
{
    pending_completion<> done(std::move(handler), io_executor_);
    const auto id = connect_waiters_.watch(done, weak_from_this());
    asio::dispatch(strand_, [self = shared_from_this(), diag, id, done = std::move(done)]() mutable {
        const auto state = self->state();
        if (state == connection_state::closed) return done.complete(error::closed);
        if (state == connection_state::connected) {
            if (diag) diag->clear();
            return done.complete({});
        }
        self->connect_waiters_.add(id, std::move(done), diag);
        // Idle: never started. Disconnected without reconnect: the loop ended after a failure, and an explicit
        // connect is a new attempt (otherwise this waiter would wait for an attempt that never comes).
        if (state == connection_state::idle || (state == connection_state::disconnected && !self->config_.reconnect)) {
            self->set_state(connection_state::connecting);
            asio::co_spawn(self->strand_, run(self), [](std::exception_ptr) {
                // The loop catches what it can; an escaping exception means the connection was torn down.
            });
        }
    });
}

connection_impl::deadline_entry connection_impl::add_deadline(clock::time_point at, exec_op* op)
{
    auto e = deadlines_.emplace(at, op);
    if (at < deadline_armed_) arm_deadline_timer();
    return e;
}

void connection_impl::arm_deadline_timer()
{
    deadline_armed_ = deadlines_.empty() ? clock::time_point::max() : deadlines_.begin()->first;
    if (deadlines_.empty()) return;
    deadline_timer_.expires_at(deadline_armed_);
    deadline_timer_.async_wait([weak = weak_from_this()](error_code ec) {
        if (auto self = weak.lock(); self && !ec) self->on_deadline_timer();
    });
}

void connection_impl::on_deadline_timer()
{
    const auto now = clock::now();
    std::vector<std::shared_ptr<exec_op>> expired;
    while (!deadlines_.empty() && deadlines_.begin()->first <= now) {
        expired.push_back(deadlines_.begin()->second->shared_from_this());  // alive while it completes
        deadlines_.erase(deadlines_.begin());
    }
    for (auto& op : expired) op->on_deadline();
    arm_deadline_timer();
}

void connection_impl::close()
{
    asio::dispatch(strand_, [self = shared_from_this()] {
        if (self->state() == connection_state::closed) return;
        const bool running = self->state() != connection_state::idle;
        self->set_state(connection_state::closed);
        if (self->transport_) self->transport_->close();
        self->writer_wakeup_.cancel();
        self->health_timer_.cancel();
        self->backoff_timer_.cancel();
        self->connect_timer_.cancel();
        self->deadline_timer_.cancel();
        diagnostics diag;
        detail::access::set_client_message(diag, "connection closed");
        self->notify_connect_waiters(error::closed, diag);
        if (!running) self->mpx_.fail_all(error::closed, error::closed);
    });
}

void connection_impl::notify_connect_waiters(error_code ec, const diagnostics& diag)
{
    connect_waiters_.complete_all(ec, [&diag](diagnostics& d) { d = diag; });
}

std::chrono::milliseconds connection_impl::next_backoff()
{
    // Exponential with "equal jitter": half fixed, half random, so restarted clients do not reconnect in step.
    backoff_ =
        backoff_.count() == 0 ? config_.reconnect_min_delay : std::min(backoff_ * 2, config_.reconnect_max_delay);
    const auto half = std::max<std::int64_t>(backoff_.count() / 2, 1);
    std::uniform_int_distribution<std::int64_t> extra(0, half);
    return std::chrono::milliseconds(half + extra(jitter_));
}

asio::awaitable<void> connection_impl::run_loop()
{
    using namespace asio::experimental::awaitable_operators;
    while (state() != connection_state::closed) {
        set_state(connection_state::connecting);
        diagnostics diag;
        error_code ec = co_await connect_once(diag);
        if (state() == connection_state::closed) break;
        notify_connect_waiters(ec, diag);
        if (!ec) {
            set_state(connection_state::connected);
            stats_.connects.fetch_add(1, std::memory_order_relaxed);
            backoff_ = std::chrono::milliseconds(0);
            last_write_ = waiting_since_ = clock::now();
            // The first loop to stop closes the transport, which ends the other two even on streams that
            // ignore per-operation cancellation.
            auto why = co_await (reader_loop() || writer_loop() || health_loop());
            ec = std::visit([](error_code e) { return e; }, why);
            stats_.disconnects.fetch_add(1, std::memory_order_relaxed);
        }
        transport_->close();
        if (state() == connection_state::closed) break;
        set_state(connection_state::disconnected);
        mpx_.fail_all(
            ec == error::protocol_error || ec == error::timeout ? ec : make_error_code(error::connection_lost),
            error::not_connected);
        forgotten_.clear();  // no confirmation of an earlier call can arrive any more
        if (!config_.reconnect) co_return;
        backoff_timer_.expires_after(next_backoff());
        co_await backoff_timer_.async_wait(use_tuple);
    }
    if (transport_) transport_->close();
    mpx_.fail_all(error::closed, error::closed);
}

asio::awaitable<error_code> connection_impl::connect_once(diagnostics& diag)
{
    transport_ = factory_ ? factory_(strand_) : make_transport(strand_, config_);
    reader_.reset();
    loaded_scripts_.clear();  // a new server process may not know them
    const auto generation = ++connect_generation_;
    connect_timed_out_ = false;
    connect_timer_.expires_after(config_.connect_timeout);
    connect_timer_.async_wait([self = shared_from_this(), generation](error_code ec) {
        if (ec || generation != self->connect_generation_) return;
        self->connect_timed_out_ = true;
        self->transport_->close();
    });

    auto [ec] = co_await async_connect(*transport_, diag, use_tuple);
    if (!ec) ec = co_await handshake(diag);
    connect_timer_.cancel();
    ++connect_generation_;  // a timer callback already queued must not close the next transport
    if (ec && connect_timed_out_) {
        diag.clear();
        detail::access::set_client_message(diag, "no answer from " + config_.to_string() +
                                                     " within the connect timeout of " +
                                                     std::to_string(config_.connect_timeout.count()) + " ms");
        ec = error::timeout;
    }
    co_return ec;
}

namespace {
// Classifies an error reply to HELLO.
error_code hello_error(std::string_view text)
{
    if (text.starts_with("NOPROTO") || text.starts_with("ERR unknown command")) return error::unsupported_server;
    if (text.starts_with("WRONGPASS") || text.starts_with("NOAUTH") || text.starts_with("NOPERM"))
        return error::auth_failed;
    return error::server_error;
}
}  // namespace

asio::awaitable<error_code> connection_impl::handshake(diagnostics& diag)
{
    std::vector<std::string> hello{"3"};
    if (!config_.password.empty()) {
        hello.insert(hello.end(), {"AUTH", config_.username.empty() ? "default" : config_.username, config_.password});
    }
    if (!config_.client_name.empty()) hello.insert(hello.end(), {"SETNAME", config_.client_name});
    request req;
    req.push_range("HELLO", hello);
    if (config_.db != 0) req.push("SELECT", config_.db);

    auto payload = req.payload();
    auto [wec, written] = co_await async_write(*transport_, asio::buffer(payload.data(), payload.size()), use_tuple);
    if (wec) {
        detail::access::set_client_message(
            diag, "cannot send the handshake to " + config_.to_string() + ": " + wec.message());
        co_return wec;
    }
    response replies;
    if (auto ec = co_await read_replies(req.expected_replies(), replies, diag)) co_return ec;
    if (replies[0].is_error()) {
        detail::access::set_server_message(diag, std::string(replies[0].error_text()));
        co_return hello_error(replies[0].error_text());
    }
    if (config_.db != 0 && replies[1].is_error()) {
        detail::access::set_server_message(diag, std::string(replies[1].error_text()));
        co_return error::server_error;
    }
    server_version_.store(server_version_of_hello(replies[0]), std::memory_order_relaxed);
    co_return co_await restore_subscriptions(diag);
}

// Subscribes again to the confirmed channels, before the connection serves requests: one SUBSCRIBE per channel,
// so a refusal (say the user lost the right to it) drops that channel alone.
asio::awaitable<error_code> connection_impl::restore_subscriptions(diagnostics& diag)
{
    if (subscribed_.empty()) co_return error_code{};
    const std::vector<std::string> channels(subscribed_.begin(), subscribed_.end());
    request req;
    for (const auto& channel : channels) req.push("SUBSCRIBE", channel);
    auto payload = req.payload();
    auto [wec, written] = co_await async_write(*transport_, asio::buffer(payload.data(), payload.size()), use_tuple);
    if (wec) {
        detail::access::set_client_message(
            diag, "cannot restore the subscriptions on " + config_.to_string() + ": " + wec.message());
        co_return wec;
    }
    response replies;
    if (auto ec = co_await read_replies(req.expected_replies(), replies, diag)) co_return ec;
    for (std::size_t i = 0; i < channels.size(); ++i) {
        if (replies[i].is_error()) {
            subscribed_.erase(channels[i]);
            stats_.subscribe_refusals.fetch_add(1, std::memory_order_relaxed);
        } else {
            stats_.resubscribes.fetch_add(1, std::memory_order_relaxed);
        }
    }
    co_return error_code{};
}

asio::awaitable<error_code> connection_impl::read_replies(std::size_t count, response& out, diagnostics& diag)
{
    for (;;) {
        error_code ec;
        while (out.size() < count) {
            auto value = reader_.next(ec);
            if (ec) {
                detail::access::set_client_message(diag,
                                                   "malformed reply from " + config_.to_string() + ": " + ec.message());
                co_return error::protocol_error;
            }
            if (!value) break;
            if (value->data_type != resp::type::push) {
                out.push_back(std::move(*value));
            } else if (confirmation_kind(*value)) {
                stats_.pushes.fetch_add(1, std::memory_order_relaxed);
                deliver_push(*value);
                out.push_back(std::move(*value));  // the confirmation of a restored subscription
            } else {
                stats_.pushes.fetch_add(1, std::memory_order_relaxed);
                deliver_push(*value);  // a message published between two confirmations
            }
        }
        if (out.size() == count) co_return error_code{};
        auto space = reader_.prepare(4096);
        auto [rec, n] = co_await async_read_some(*transport_, asio::buffer(space.data(), space.size()), use_tuple);
        if (rec) {
            detail::access::set_client_message(
                diag, "connection to " + config_.to_string() + " closed during the handshake: " + rec.message());
            co_return rec;
        }
        reader_.commit(n);
        stats_.bytes_read.fetch_add(n, std::memory_order_relaxed);
    }
}

void connection_impl::deliver_push(const resp::value& push)
{
    // A handler's failure must not take the connection down.
    if (push_handler_) {
        try {
            push_handler_(push);
        } catch (...) {
        }
    }
    if (!message_handler_) return;
    // RESP3: [message, channel, payload], [smessage, channel, payload], [pmessage, pattern, channel, payload].
    const auto& e = push.elements;
    if (e.empty()) return;
    const std::string_view kind = e[0].text;
    std::size_t channel = 0;
    if ((kind == "message" || kind == "smessage") && e.size() == 3)
        channel = 1;
    else if (kind == "pmessage" && e.size() == 4)
        channel = 2;
    else
        return;
    try {
        message_handler_(e[channel].text, e[channel + 1].text);
    } catch (...) {
    }
}

void connection_impl::on_value(resp::value& value, error_code& ec)
{
    // The raw push handler sees confirmations too, but the multiplexer moves them to their request.
    std::optional<resp::value> copy;
    if (push_handler_ && value.data_type == resp::type::push && confirmation_kind(value)) copy = value;
    switch (mpx_.consume(value)) {
        case multiplexer::consumed::reply:
            stats_.replies.fetch_add(1, std::memory_order_relaxed);
            break;
        case multiplexer::consumed::confirmation:
            stats_.pushes.fetch_add(1, std::memory_order_relaxed);
            if (copy) deliver_push(*copy);  // `value` went to its request
            break;
        case multiplexer::consumed::push:
            stats_.pushes.fetch_add(1, std::memory_order_relaxed);
            deliver_push(value);
            break;
        case multiplexer::consumed::unsolicited:
            ec = error::protocol_error;  // a reply nobody asked for: the stream is out of step
            break;
    }
}

asio::awaitable<error_code> connection_impl::reader_loop()
{
    for (;;) {
        error_code ec;
        while (auto value = reader_.next(ec)) {
            on_value(*value, ec);
            if (ec) co_return stop_serving(ec);
        }
        if (ec) co_return stop_serving(error::protocol_error);
        auto space = reader_.prepare(16 * 1024);
        auto [rec, n] = co_await async_read_some(*transport_, asio::buffer(space.data(), space.size()), use_tuple);
        if (rec) co_return stop_serving(state() == connection_state::closed ? make_error_code(error::closed) : rec);
        reader_.commit(n);
        waiting_since_ = clock::now();
        stats_.bytes_read.fetch_add(n, std::memory_order_relaxed);
    }
}

asio::awaitable<error_code> connection_impl::writer_loop()
{
    for (;;) {
        while (!mpx_.has_waiting()) {
            writer_wakeup_.expires_at(clock::time_point::max());
            co_await writer_wakeup_.async_wait(use_tuple);
            auto cs = co_await asio::this_coro::cancellation_state;
            if (cs.cancelled() != asio::cancellation_type::none || state() != connection_state::connected)
                co_return stop_serving(error::closed);
        }
        if (mpx_.awaiting_replies() == 0) waiting_since_ = clock::now();
        const auto before = mpx_.size() - mpx_.awaiting_replies();
        auto bytes = mpx_.prepare_write();
        last_write_ = clock::now();
        auto [ec, n] = co_await async_write(*transport_, asio::buffer(bytes.data(), bytes.size()), use_tuple);
        if (ec) co_return stop_serving(state() == connection_state::closed ? make_error_code(error::closed) : ec);
        mpx_.commit_write();
        stats_.writes.fetch_add(1, std::memory_order_relaxed);
        stats_.bytes_written.fetch_add(n, std::memory_order_relaxed);
        stats_.requests.fetch_add(before, std::memory_order_relaxed);
    }
}

asio::awaitable<error_code> connection_impl::health_loop()
{
    const auto interval = config_.health_check_interval;
    const auto tick = std::max(std::chrono::milliseconds(10), std::min(interval, config_.health_check_timeout / 4));
    for (;;) {
        health_timer_.expires_after(tick);
        auto [ec] = co_await health_timer_.async_wait(use_tuple);
        if (ec || state() != connection_state::connected) co_return stop_serving(error::closed);
        const auto now = clock::now();
        if (mpx_.awaiting_replies() > 0 && now - waiting_since_ > config_.health_check_timeout)
            co_return stop_serving(error::timeout);  // a paused or silent server
        if (mpx_.size() == 0 && now - last_write_ >= interval) submit(std::make_shared<detached_entry>(ping()));
    }
}

void start_connect(const std::shared_ptr<connection_impl>& impl, diagnostics* diag, completion handler)
{
    impl->start_connect(diag, std::move(handler));
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
    if (!call->channels.empty()) call->req.push_range(subscribe ? "SUBSCRIBE" : "UNSUBSCRIBE", call->channels);
    auto op = std::make_shared<exec_op>(impl, std::move(call), std::move(handler));
    asio::dispatch(impl->strand(), [op] { op->start(); });
}

}  // namespace detail

connection detail::make_connection(boost::asio::any_io_executor ex, node_config config, transport_factory factory)
{
    return access::make<connection>(
        std::make_shared<connection_impl>(std::move(ex), std::move(config), std::move(factory)));
}

connection::connection(executor_type ex, node_config config)
    : impl_(std::make_shared<detail::connection_impl>(std::move(ex), std::move(config), nullptr))
{}

connection::connection(std::shared_ptr<detail::connection_impl> impl) noexcept : impl_(std::move(impl)) {}

connection::~connection()
{
    if (impl_) impl_->close();
}

connection::connection(connection&&) noexcept = default;

connection& connection::operator=(connection&& other) noexcept
{
    if (this != &other) {
        if (impl_) impl_->close();
        impl_ = std::move(other.impl_);
    }
    return *this;
}

connection::executor_type connection::get_executor() const noexcept
{
    return impl_->strand();
}
std::uint32_t connection::server_version() const noexcept
{
    return impl_->server_version();
}

const node_config& connection::config() const noexcept
{
    return impl_->config();
}
void connection::set_push_handler(std::function<void(const resp::value&)> handler)
{
    impl_->set_push_handler(std::move(handler));
}
void connection::set_message_handler(std::function<void(std::string_view, std::string_view)> handler)
{
    impl_->set_message_handler(std::move(handler));
}
void connection::close()
{
    impl_->close();
}
connection_state connection::state() const noexcept
{
    return impl_->state();
}

usage connection::get_usage() const noexcept
{
    auto& s = impl_->stats();
    auto get = [](const std::atomic<std::uint64_t>& v) { return v.load(std::memory_order_relaxed); };
    return usage{get(s.writes),      get(s.bytes_written), get(s.bytes_read),        get(s.requests),
                 get(s.replies),     get(s.pushes),        get(s.abandoned),         get(s.connects),
                 get(s.disconnects), get(s.resubscribes),  get(s.subscribe_refusals)};
}

}  // namespace redlock
