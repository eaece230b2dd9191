// The state of one connection, which its parts share. Each part is a file of its own and says why it exists:
//   connection.cpp        the public class: a handle on this state
//   run.cpp               the connection's life: attempts, serving, backoff between attempts, close, connect waiters
//   connect.cpp           one attempt: the stream within connect_timeout, then the handshake in one round trip
//   handshake.hpp         the handshake request and what its replies mean (pure)
//   reader.cpp            the reader loop: every value read goes to its request or to the push handlers
//   writer.cpp            the writer loop: every waiting request in one write
//   health_check.cpp      PING when idle; a silent server ends the connection
//   exec.hpp, exec.cpp    async_exec, async_subscribe/unsubscribe: queueing, cancellation, NOSCRIPT fallback
//   request_deadlines.cpp one timer for the deadlines of every request in flight
//   subscriptions.hpp     the channels to restore after a reconnect (pure)
//   pushes.hpp            the user's push and message handlers
//   multiplexer.hpp       which reply is whose (pure)
//   transport.hpp         the byte stream: TCP, TLS, a unix socket (transport.cpp), or a test's
// Everything here runs on the strand, except what is atomic (state, version, counters): getters read them from
// any thread.
#pragma once

#include "common/completion.hpp"
#include "common/shutdown_registry.hpp"
#include "common/waiter_list.hpp"
#include "connection/multiplexer.hpp"
#include "connection/pushes.hpp"
#include "connection/subscriptions.hpp"
#include "connection/transport.hpp"
#include "resp/reader.hpp"

#include <redlock/connection.hpp>
#include <redlock/stats.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <unordered_set>

namespace redlock::detail {

using clock = std::chrono::steady_clock;
/// How the connection's coroutines await: errors as values, never thrown.
inline constexpr auto use_tuple = boost::asio::as_tuple(boost::asio::use_awaitable);

class exec_op;
struct handshake_request;

/// The counters of usage, written on the strand and read from any thread.
struct atomic_usage {
    std::atomic<std::uint64_t> writes{0}, bytes_written{0}, bytes_read{0}, requests{0}, replies{0}, pushes{0},
        abandoned{0}, connects{0}, disconnects{0}, resubscribes{0}, subscribe_refusals{0}, subscriptions_lost{0};

    usage snapshot() const noexcept;
    static void add(std::atomic<std::uint64_t>& counter, std::uint64_t n = 1) noexcept
    {
        counter.fetch_add(n, std::memory_order_relaxed);
    }
};

class connection_impl : public std::enable_shared_from_this<connection_impl>, public shutdown_participant {
public:
    /// An empty `factory` makes TCP, TLS or unix-socket transports, as the config says.
    connection_impl(boost::asio::any_io_executor ex, node_config config, transport_factory factory);

    /// A new connection, enrolled for the context's shutdown. An empty `factory`: as the constructor's.
    static std::shared_ptr<connection_impl> make(boost::asio::any_io_executor ex, node_config config,
                                                 transport_factory factory);

    strand_type& strand() noexcept { return strand_; }
    const boost::asio::any_io_executor& io_executor() const noexcept { return io_executor_; }
    const node_config& config() const noexcept { return config_; }
    connection_state state() const noexcept { return state_.load(std::memory_order_relaxed); }
    server_identity server() const noexcept
    {
        const auto packed = server_.load(std::memory_order_relaxed);
        return {static_cast<server_kind>(packed >> 32), static_cast<std::uint32_t>(packed)};
    }
    void set_server(server_identity server) noexcept
    {
        server_.store((std::uint64_t{static_cast<std::uint8_t>(server.kind)} << 32) | server.version,
                      std::memory_order_relaxed);
    }
    atomic_usage& stats() noexcept { return stats_; }
    multiplexer& mpx() noexcept { return mpx_; }
    subscription_tracker& subscriptions() noexcept { return subscriptions_; }
    push_handlers& pushes() noexcept { return pushes_; }

    // run.cpp
    void start_connect(diagnostics* diag, completion handler);
    void close();
    /// The context shuts down: the waiting async_connect calls and the queued requests go, uncompleted.
    void drop_handlers() noexcept override;
    void set_disconnect_handler(std::function<void(error_code)> handler) { disconnect_handler_ = std::move(handler); }

    // exec.cpp
    /// Queues an entry for the writer.
    void submit(std::shared_ptr<exec_entry> entry);
    /// Pipelines SCRIPT LOAD ahead of the first EVALSHA of each script in this connection session.
    void load_scripts(const request& req);

    // request_deadlines.cpp
    using deadline_entry = std::multimap<clock::time_point, exec_op*>::iterator;
    deadline_entry add_deadline(clock::time_point at, exec_op* op);
    void remove_deadline(deadline_entry e);

private:
    // run.cpp
    static boost::asio::awaitable<void> run(std::shared_ptr<connection_impl> self);
    boost::asio::awaitable<void> run_loop();
    std::chrono::milliseconds next_backoff();
    void set_state(connection_state s) noexcept { state_.store(s, std::memory_order_relaxed); }
    /// Ends the serving loops: the first to stop closes the transport, which ends the others even on streams that
    /// ignore per-operation cancellation.
    error_code stop_serving(error_code why) noexcept
    {
        transport_->close();
        return why;
    }

    // connect.cpp
    boost::asio::awaitable<error_code> connect_once(diagnostics& diag);
    boost::asio::awaitable<error_code> handshake(diagnostics& diag);
    boost::asio::awaitable<error_code> exchange(const handshake_request& sent, response& replies,
                                                std::vector<std::string>& dropped, diagnostics& diag);
    boost::asio::awaitable<error_code> read_replies(std::size_t count, response& out, std::vector<std::string>* dropped,
                                                    diagnostics& diag);

    // reader.cpp
    boost::asio::awaitable<error_code> reader_loop();
    void on_value(resp::value& value, error_code& ec);
    void on_server_unsubscribed(const std::string& channel);

    // writer.cpp
    boost::asio::awaitable<error_code> writer_loop();

    // health_check.cpp
    boost::asio::awaitable<error_code> health_loop();

    // request_deadlines.cpp
    void arm_deadline_timer();
    void on_deadline_timer();
    /// Cancels the deadline timer when no request waits (the session ended).
    void disarm_idle_deadline_timer();

    boost::asio::any_io_executor io_executor_;
    strand_type strand_;
    node_config config_;
    transport_factory factory_;
    std::unique_ptr<transport> transport_;  // of the current attempt
    multiplexer mpx_;
    resp::reader reader_;
    subscription_tracker subscriptions_;
    push_handlers pushes_;
    std::atomic<connection_state> state_{connection_state::idle};
    // Of the last handshake: kind << 32 | version. One word: clang (the asan and clang presets) compiles an atomic
    // server_identity, a struct with padding, into libatomic calls, which nothing links.
    std::atomic<std::uint64_t> server_{0};
    atomic_usage stats_;

    // run.cpp
    boost::asio::steady_timer backoff_timer_;
    std::chrono::milliseconds backoff_{0};
    std::minstd_rand jitter_{std::random_device{}()};
    waiter_list<> connect_waiters_;                       // async_connect calls waiting for the end of an attempt
    std::function<void(error_code)> disconnect_handler_;  // told of the end of each connected session

    // connect.cpp
    boost::asio::steady_timer connect_timer_;
    std::uint64_t connect_generation_ = 0;
    bool connect_timed_out_ = false;

    // writer.cpp, health_check.cpp
    boost::asio::steady_timer writer_wakeup_;  // a condition variable: cancelled when there is something to write
    boost::asio::steady_timer health_timer_;
    clock::time_point last_write_{};
    clock::time_point waiting_since_{};  // last progress while replies are outstanding

    // exec.cpp
    std::unordered_set<std::string> loaded_scripts_;  // SHAs loaded in this connection session

    // request_deadlines.cpp
    boost::asio::steady_timer deadline_timer_;
    std::multimap<clock::time_point, exec_op*> deadlines_;
    clock::time_point deadline_armed_ = clock::time_point::max();
};

}  // namespace redlock::detail
