#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

#include <array>
#include <atomic>
#include <common/io_thread.hpp>
#include <common/servers/fault_proxy.hpp>
#include <cstdio>
#include <deque>
#include <set>

namespace redlock::test {

namespace asio = boost::asio;
using asio::ip::tcp;
using boost::system::error_code;
using std::chrono::steady_clock;

namespace {

constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);

void report(std::exception_ptr e)
{
    if (!e) return;
    try {
        std::rethrow_exception(e);
    } catch (const std::exception& x) {
        std::fprintf(stderr, "fault_proxy: %s\n", x.what());
    }
}

void close_with_reset(tcp::socket& socket)
{
    error_code ignored;
    if (socket.is_open()) socket.set_option(tcp::socket::linger(true, 0), ignored);
    socket.close(ignored);
}

}  // namespace

namespace detail {

class proxy_session;

// Everything below runs on the io thread only, except the atomics.
class proxy_core {
public:
    using mode = fault_proxy::mode;

    explicit proxy_core(std::uint16_t upstream_port);
    ~proxy_core();

    void set_mode(mode m, std::chrono::milliseconds delay);
    void reset_all();

    std::uint16_t port() const { return port_; }
    mode published_mode() const { return published_mode_.load(); }
    std::size_t accepted() const { return accepted_.load(); }
    std::size_t open_sessions() const { return open_sessions_.load(); }

    // For sessions.
    asio::io_context& context() { return io_.context(); }
    mode current_mode() const { return mode_; }
    std::chrono::milliseconds delay() const { return delay_; }
    std::uint16_t upstream_port() const { return upstream_port_; }
    void forget(const std::shared_ptr<proxy_session>& session)
    {
        sessions_.erase(session);
        open_sessions_ = sessions_.size();
    }

private:
    void open_listener();
    asio::awaitable<void> accept_loop(unsigned generation);
    template <class F>
    void for_each_session(F f);

    io_thread io_;
    tcp::acceptor acceptor_{io_.context()};
    std::atomic<std::uint16_t> port_{0};
    std::uint16_t upstream_port_;
    mode mode_ = mode::pass;
    std::chrono::milliseconds delay_{};
    unsigned generation_ = 0;  // bumped when the listener closes, so an old accept loop ends
    std::set<std::shared_ptr<proxy_session>> sessions_;
    std::atomic<mode> published_mode_{mode::pass};
    std::atomic<std::size_t> accepted_{0};
    std::atomic<std::size_t> open_sessions_{0};
};

// One client connection and its upstream connection.
class proxy_session : public std::enable_shared_from_this<proxy_session> {
public:
    proxy_session(proxy_core& core, tcp::socket client) : core_(core), client_(std::move(client)) {}

    void start() { asio::co_spawn(client_.get_executor(), run(shared_from_this()), report); }

    void close(bool reset)
    {
        if (closed_) return;
        closed_ = true;
        error_code ignored;
        if (reset) {
            close_with_reset(client_);
        } else {
            client_.close(ignored);
        }
        server_.close(ignored);
        to_server_.timer.cancel();
        to_client_.timer.cancel();
        core_.forget(shared_from_this());
    }

private:
    using mode = fault_proxy::mode;

    struct chunk {
        std::string bytes;
        steady_clock::time_point due;
    };

    // One way of the connection: a reader queues chunks, a writer sends them when they are due.
    struct direction {
        direction(tcp::socket& from, tcp::socket& to, bool requests)
            : from(from), to(to), requests(requests), timer(from.get_executor())
        {}
        tcp::socket& from;
        tcp::socket& to;
        bool requests;  // client -> server
        std::deque<chunk> queue;
        bool writing = false;
        // Its source ended (end of stream or an error: what is queued still goes out, then the session closes), or
        // its destination went away (nothing more goes out).
        bool ended = false;
        asio::steady_timer timer;
    };

    direction& other(const direction& d) { return &d == &to_server_ ? to_client_ : to_server_; }

    // What the wire would still carry: a direction whose reader ended has its queue to deliver.
    static bool draining(const direction& d) { return d.ended && (d.writing || !d.queue.empty()); }

    // One way of the connection is done (its source or its destination went away). The session closes, unless
    // the other way still has chunks in flight: bytes a peer wrote before it closed still reach the other peer, as
    // they would over a slow network; the session closes once they are delivered.
    void finish(direction& d)
    {
        d.ended = true;
        d.queue.clear();
        d.timer.cancel();
        if (draining(other(d))) return;
        close(false);
    }

    bool drops(const direction& d) const
    {
        auto m = core_.current_mode();
        return m == mode::blackhole || (m == mode::drop_replies && !d.requests) || (d.requests && !server_up_);
    }

    static asio::awaitable<void> run(std::shared_ptr<proxy_session> self)
    {
        tcp::endpoint upstream(asio::ip::address_v4::loopback(), self->core_.upstream_port());
        auto [ec] = co_await self->server_.async_connect(upstream, use_tuple);
        if (self->closed_) co_return;
        if (ec) {
            // Nothing to forward to. A blackholed client gets a sink; others see the connection close.
            if (self->core_.current_mode() != mode::blackhole) {
                self->close(false);
                co_return;
            }
        } else {
            self->server_up_ = true;
            error_code ignored;
            self->server_.set_option(tcp::no_delay(true), ignored);
            asio::co_spawn(self->client_.get_executor(), pump(self, self->to_client_), report);
        }
        self->client_.set_option(tcp::no_delay(true), ec);
        co_await pump(self, self->to_server_);
    }

    static asio::awaitable<void> pump(std::shared_ptr<proxy_session> self, direction& d)
    {
        std::array<char, 16384> buffer;
        for (;;) {
            auto [ec, n] = co_await d.from.async_read_some(asio::buffer(buffer), use_tuple);
            if (self->closed_) co_return;
            if (ec) {
                if (!d.requests && self->core_.current_mode() == mode::blackhole) {
                    // The server went away while blackholed: keep swallowing the client's bytes.
                    self->server_up_ = false;
                    error_code ignored;
                    self->server_.close(ignored);
                } else if (d.writing || !d.queue.empty()) {
                    d.ended = true;  // the writer forwards the delayed chunks, then ends the session
                } else {
                    self->finish(d);
                }
                co_return;
            }
            if (self->core_.current_mode() == mode::reset) {
                self->close(true);
                co_return;
            }
            if (self->drops(d) || d.ended) continue;  // ended: its destination went away
            auto delay = self->core_.current_mode() == mode::delay ? self->core_.delay() : std::chrono::milliseconds(0);
            d.queue.push_back({std::string(buffer.data(), n), steady_clock::now() + delay});
            if (!d.writing) {
                d.writing = true;
                asio::co_spawn(self->client_.get_executor(), write_queue(self, d), report);
            }
        }
    }

    static asio::awaitable<void> write_queue(std::shared_ptr<proxy_session> self, direction& d)
    {
        while (!d.queue.empty() && !self->closed_) {
            auto due = d.queue.front().due;
            if (due > steady_clock::now()) {
                d.timer.expires_at(due);
                co_await d.timer.async_wait(use_tuple);
                if (self->closed_ || d.queue.empty()) break;
            }
            auto bytes = std::move(d.queue.front().bytes);
            d.queue.pop_front();
            if (self->drops(d)) continue;  // the mode changed while it waited
            auto [ec, n] = co_await asio::async_write(d.to, asio::buffer(bytes), use_tuple);
            if (self->closed_) break;
            if (ec) {
                d.writing = false;
                self->finish(d);
                co_return;
            }
        }
        d.writing = false;
        if (d.ended && !self->closed_) self->finish(d);
    }

    proxy_core& core_;
    tcp::socket client_;
    tcp::socket server_{client_.get_executor()};
    bool server_up_ = false;
    bool closed_ = false;
    direction to_server_{client_, server_, true};
    direction to_client_{server_, client_, false};
};

proxy_core::proxy_core(std::uint16_t upstream_port) : upstream_port_(upstream_port)
{
    io_.call([this] {
        open_listener();
        asio::co_spawn(context(), accept_loop(generation_), report);
    });
}

proxy_core::~proxy_core()
{
    try {
        io_.call([this] {
            ++generation_;
            error_code ignored;
            acceptor_.close(ignored);
            for_each_session([](proxy_session& s) { s.close(false); });
        });
    } catch (const std::exception& e) {
        std::fprintf(stderr, "fault_proxy: shutdown: %s\n", e.what());
    }
    io_.join();
}

void proxy_core::open_listener()
{
    acceptor_.open(tcp::v4());
    acceptor_.set_option(tcp::acceptor::reuse_address(true));
    try {
        acceptor_.bind(tcp::endpoint(asio::ip::address_v4::loopback(), port_));
        acceptor_.listen();
    } catch (...) {
        error_code ignored;
        acceptor_.close(ignored);
        throw;
    }
    port_ = acceptor_.local_endpoint().port();
}

asio::awaitable<void> proxy_core::accept_loop(unsigned generation)
{
    for (;;) {
        auto [ec, socket] = co_await acceptor_.async_accept(use_tuple);
        if (generation != generation_) co_return;
        if (ec) {
            if (!acceptor_.is_open()) co_return;
            // E.g. the client gave up before we accepted, or no descriptors are left: do not spin.
            asio::steady_timer pause(context(), std::chrono::milliseconds(10));
            co_await pause.async_wait(use_tuple);
            if (generation != generation_) co_return;
            continue;
        }
        ++accepted_;
        if (mode_ == mode::reset) {
            close_with_reset(socket);
            continue;
        }
        auto session = std::make_shared<proxy_session>(*this, std::move(socket));
        sessions_.insert(session);
        open_sessions_ = sessions_.size();
        session->start();
    }
}

template <class F>
void proxy_core::for_each_session(F f)
{
    auto copy = sessions_;  // closing a session removes it from the set
    for (const auto& s : copy) f(*s);
}

void proxy_core::set_mode(mode m, std::chrono::milliseconds delay)
{
    io_.call([&] {
        if (m != mode::refuse && !acceptor_.is_open()) {
            open_listener();  // may throw if someone took the port meanwhile: mode stays refuse
            ++generation_;
            asio::co_spawn(context(), accept_loop(generation_), report);
        }
        mode_ = m;
        delay_ = delay;
        published_mode_ = m;
        if (m == mode::refuse && acceptor_.is_open()) {
            ++generation_;
            acceptor_.close();
        }
        if (m == mode::reset) for_each_session([](proxy_session& s) { s.close(true); });
    });
}

void proxy_core::reset_all()
{
    io_.call([this] { for_each_session([](proxy_session& s) { s.close(true); }); });
}

}  // namespace detail

fault_proxy::fault_proxy(std::uint16_t upstream_port, bool tls)
    : core_(std::make_unique<detail::proxy_core>(upstream_port)), tls_(tls)
{}

fault_proxy::~fault_proxy() = default;

std::uint16_t fault_proxy::port() const
{
    return core_->port();
}

std::string fault_proxy::url() const
{
    return (tls_ ? "rediss://127.0.0.1:" : "redis://127.0.0.1:") + std::to_string(port());
}

void fault_proxy::set_mode(mode m, std::chrono::milliseconds delay)
{
    core_->set_mode(m, delay);
}

fault_proxy::mode fault_proxy::current_mode() const
{
    return core_->published_mode();
}

std::size_t fault_proxy::connections() const
{
    return core_->accepted();
}

std::size_t fault_proxy::open_connections() const
{
    return core_->open_sessions();
}

void fault_proxy::reset_all()
{
    core_->reset_all();
}

}  // namespace redlock::test
