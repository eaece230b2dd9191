#include "common/completion.hpp"
#include "common/issue_lane.hpp"
#include "common/key_slot.hpp"
#include "common/node_handlers.hpp"
#include "common/shutdown_registry.hpp"
#include "sentinel/sentinel_node.hpp"
#include "sentinel/sentinel_replies.hpp"

#include <redlock/connection.hpp>
#include <redlock/detail/access.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <set>

namespace redlock::detail {

namespace asio = boost::asio;
using clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

namespace {

constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);
constexpr auto first_retry_delay = 10ms;
constexpr auto max_retry_delay = 500ms;
// The Sentinels publish a completed failover on this channel: `<name> <old-ip> <old-port> <new-ip> <new-port>`.
constexpr std::string_view switch_master_channel = "+switch-master";

std::chrono::milliseconds jittered(std::chrono::milliseconds base)
{
    thread_local std::minstd_rand random(std::random_device{}());
    std::uniform_int_distribution<std::int64_t> spread(0, std::max<std::int64_t>(base.count() / 4, 1));
    return base + std::chrono::milliseconds(spread(random));
}

std::string message_of(const diagnostics& diag, error_code ec)
{
    if (!diag.message().empty()) return std::string(diag.message());
    return ec.message();
}

std::string joined(const std::vector<std::string>& notes)
{
    std::string out;
    for (const auto& note : notes) {
        if (!out.empty()) out += "; ";
        out += note;
    }
    return out;
}

}  // namespace

/// The master: its address and the connection to it. The connection does not reconnect: when it drops, the node
/// asks the Sentinels again and opens a new one, checked with ROLE, wherever the master is then.
struct sentinel_master_link {
    sentinel_master_link(const asio::any_io_executor& ex, node_config config, server_address at, std::uint64_t gen)
        : address(std::move(at)), generation(gen), key(std::to_string(gen)), conn(ex, std::move(config))
    {}
    server_address address;
    std::uint64_t generation;  // each link its own: a lane target, a channel's home
    std::string key;
    connection conn;
};

/// The +switch-master subscription on one Sentinel. `conn` is set and reset on the strand, under the node's mutex
/// (which close() takes to close it from any thread).
struct sentinel_watch {
    sentinel_watch(const asio::any_io_executor& strand, server_address a) : at(std::move(a)), wakeup(strand) {}
    server_address at;
    std::shared_ptr<connection> conn;
    asio::steady_timer wakeup;  // a condition variable: the connection dropped, or the node closed
};

/// One async_exec: the caller's request and reply, where it stands, its deadline.
struct sentinel_exec {
    sentinel_exec(const asio::any_io_executor& strand, const request& r, response& out, node::completion handler,
                  const asio::any_io_executor& io)
        : req(&r), resp(&out), deadline_timer(strand), completion(std::move(handler), io)
    {}
    const request* req;
    response* resp;
    std::uint64_t seq = 0;
    std::chrono::milliseconds timeout{};  // the whole request's: each attempt gets what is left of it
    clock::time_point deadline;
    clock::time_point not_before{};
    asio::steady_timer deadline_timer;
    std::optional<asio::steady_timer> retry_timer;
    request attempt;  // a copy of *req with the time left, for an attempt sent later
    pending_completion<> completion;
    unsigned retries = 0;
    error_code refusal;  // why it was queued again: not_connected, or server_error (READONLY...) with it in `resp`
    bool in_flight = false;
    bool timed_out = false;
    bool done = false;
};

/// Everything the node knows, on its strand (but what the mutex guards, which other threads read).
class sentinel_state : public std::enable_shared_from_this<sentinel_state>, public shutdown_participant {
public:
    sentinel_state(const asio::any_io_executor& ex, const node_config& config)
        : io_(ex),
          strand_(make_strand_of(ex)),
          config_(config),
          name_(config.to_string()),
          sentinels_(seeds_of(config)),
          backoff_timer_(strand_),
          handlers_(std::make_shared<node_handlers>())
    {}

    const std::string& name() const { return name_; }

    void start()
    {
        asio::post(strand_, [self = shared_from_this()] {
            self->request_discovery(true);
            self->watch_all(self->sentinels_.in_order());
        });
    }

    // --- connect ---------------------------------------------------------------------------------------------

    void connect(diagnostics* diag, node::completion handler)
    {
        auto done = std::make_shared<pending_completion<>>(std::move(handler), io_);
        asio::post(strand_, [self = shared_from_this(), diag, done] {
            if (self->closed_) return done->complete(error::closed);
            if (self->master_up()) {
                if (diag != nullptr) diag->clear();
                return done->complete({});
            }
            // The answer of the next pass, within the connect timeout (a pass may ask several Sentinels).
            auto waiter =
                std::make_shared<connect_waiter>(connect_waiter{diag, done, asio::steady_timer(self->strand_)});
            self->connect_waiters_.push_back(waiter);
            waiter->timer.expires_after(self->config_.connect_timeout);
            waiter->timer.async_wait([weak = self->weak_from_this(), waiter](error_code ec) {
                auto s = weak.lock();
                if (ec || !s || !waiter->done) return;
                std::erase(s->connect_waiters_, waiter);
                std::string why = "no master found within the connect timeout of " +
                                  std::to_string(s->config_.connect_timeout.count()) + " ms";
                if (!s->last_failure_.empty()) why += " (" + s->last_failure_ + ")";
                s->complete_waiter(*waiter, error::timeout, why);
            });
            self->request_discovery(true);
        });
    }

    // --- exec ------------------------------------------------------------------------------------------------

    void exec(const request& req, response& resp, node::completion handler)
    {
        auto op = std::make_shared<sentinel_exec>(strand_, req, resp, std::move(handler), io_);
        op->timeout = req.timeout().count() > 0 ? req.timeout() : config_.request_timeout;
        op->deadline = clock::now() + op->timeout;
        asio::post(strand_, [self = shared_from_this(), op] { self->issue(op); });
    }

    // --- pub/sub ---------------------------------------------------------------------------------------------

    void subscribe(std::vector<std::string> channels, diagnostics* diag, node::completion handler)
    {
        auto done = std::make_shared<pending_completion<>>(std::move(handler), io_);
        asio::post(strand_, [self = shared_from_this(), channels = std::move(channels), diag, done]() mutable {
            self->subscribe_on_strand(std::move(channels), diag, done, true);
        });
    }

    void unsubscribe(std::vector<std::string> channels, node::completion handler)
    {
        auto done = std::make_shared<pending_completion<>>(std::move(handler), io_);
        asio::post(strand_, [self = shared_from_this(), channels = std::move(channels), done]() mutable {
            if (self->closed_) return done->complete(error::closed);
            if (channels.empty()) return done->complete(error::invalid_argument);
            for (const auto& channel : channels) self->channel_homes_.erase(channel);
            // Where they are subscribed, if anywhere: only the master's link (a link left behind was closed).
            auto link = self->master_;
            if (!link) return done->complete({});
            link->conn.async_unsubscribe(std::move(channels), [done](error_code ec) { done->complete(ec); });
        });
    }

    void set_message_handler(node::message_handler handler) { handlers_->set_message_handler(std::move(handler)); }
    void set_tracking_handler(node::tracking_handler handler) { handlers_->set_tracking_handler(std::move(handler)); }

    // --- any thread ------------------------------------------------------------------------------------------

    // The master's; once it is left, the last master's until another is found.
    server_identity server() const
    {
        std::lock_guard lock(mutex_);
        return master_ ? master_->conn.server() : last_server_;
    }

    usage get_usage() const
    {
        std::lock_guard lock(mutex_);
        usage total = retired_usage_;
        if (master_) total += master_->conn.get_usage();
        return total;
    }

    /// The context shuts down: requests waiting in the lane, connect waiters and subscribes waiting for a master go,
    /// uncompleted (one owning the frame that owns this node would keep both alive). Those in flight are the
    /// connections' to drop.
    void drop_handlers() noexcept override
    {
        auto lane = std::move(lane_);
        lane_ = {};
        auto waiters = std::move(connect_waiters_);
        connect_waiters_.clear();
        auto subscribes = std::move(pending_subscribes_);
        pending_subscribes_.clear();
    }

    void close()
    {
        if (closed_.exchange(true)) return;
        {
            std::lock_guard lock(mutex_);
            if (master_) master_->conn.close();  // in flight: error::closed
            for (auto* probe : probes_) probe->close();
            for (auto& w : watches_)
                if (w->conn) w->conn->close();
        }
        asio::post(strand_, [self = shared_from_this()] { self->close_on_strand(); });
    }

private:
    struct connect_waiter {
        diagnostics* diag;
        std::shared_ptr<pending_completion<>> done;
        asio::steady_timer timer;
    };
    struct pending_subscribe {
        std::vector<std::string> channels;
        diagnostics* diag;
        std::shared_ptr<pending_completion<>> done;
    };
    using op_ptr = std::shared_ptr<sentinel_exec>;
    using link_ptr = std::shared_ptr<sentinel_master_link>;

    // A connection of a pass (a Sentinel asked, a master checked), closed by close() while the pass awaits it.
    class probe_guard {
    public:
        probe_guard(sentinel_state& state, connection& conn) : state_(state), conn_(conn)
        {
            std::lock_guard lock(state_.mutex_);
            if (state_.closed_) conn_.close();
            state_.probes_.insert(&conn_);
        }
        ~probe_guard()
        {
            std::lock_guard lock(state_.mutex_);
            state_.probes_.erase(&conn_);
        }
        probe_guard(const probe_guard&) = delete;
        probe_guard& operator=(const probe_guard&) = delete;

    private:
        sentinel_state& state_;
        connection& conn_;
    };

    static std::vector<server_address> seeds_of(const node_config& config)
    {
        std::vector<server_address> seeds{server_address{config.host, config.port}};
        seeds.insert(seeds.end(), config.sentinel_seeds.begin(), config.sentinel_seeds.end());
        return seeds;
    }

    // A connection to one server of the deployment, which does not reconnect (the node decides where to go next).
    node_config config_of(const server_address& at, bool sentinel) const
    {
        node_config c = config_;
        c.host = at.host;
        c.port = at.port;
        c.sentinel = false;
        c.sentinel_master.clear();
        c.sentinel_seeds.clear();
        c.sentinel_username.clear();
        c.sentinel_password.clear();
        c.reconnect = false;
        if (sentinel) {
            c.username = config_.sentinel_username;
            c.password = config_.sentinel_password;
            c.db = 0;
            c.track_keys = false;  // a Sentinel holds no keys
        }
        return c;
    }

    bool master_up() const { return master_ && master_->conn.state() == connection_state::connected; }

    // --- discovery -------------------------------------------------------------------------------------------

    // Starts a pass unless one runs (then another follows it). A pass that failed waits for its backoff, unless
    // `urgent` (a +switch-master, a connect call, the master's link lost).
    void request_discovery(bool urgent)
    {
        if (closed_) return;
        if (discovering_) {
            discover_again_ = true;
            again_urgent_ = again_urgent_ || urgent;
            return;
        }
        if (backoff_pending_ && !urgent) return;
        if (backoff_pending_) {
            backoff_pending_ = false;
            ++backoff_generation_;
            backoff_timer_.cancel();
        }
        discovering_ = true;
        asio::co_spawn(strand_, discover(), [self = shared_from_this()](std::exception_ptr failure) {
            self->discovering_ = false;
            if (failure) self->pass_failed(error::protocol_error, {"finding the master failed"}, false, false);
            if (!self->discover_again_) return;
            const bool urgent_again = std::exchange(self->again_urgent_, false);
            self->discover_again_ = false;
            if (!self->master_up() || self->hint_) self->request_discovery(urgent_again || self->hint_.has_value());
        });
    }

    asio::awaitable<void> discover()
    {
        std::vector<std::string> notes;
        error_code last = error::not_connected;
        bool named = false;           // a Sentinel named an address
        bool config_problem = false;  // a seed that is no Sentinel, or one that knows no such master
        if (hint_) {
            const auto hint = *std::exchange(hint_, std::nullopt);
            if (master_up() && master_->address == hint) co_return pass_succeeded();
            if (co_await try_master(hint, "+switch-master", notes, last)) co_return pass_succeeded();
        }
        const auto sentinels = sentinels_.in_order();  // a copy: asking learns more
        for (const auto& at : sentinels) {
            if (closed_) co_return;
            auto answer = co_await ask(at, notes, last);
            if (closed_) co_return;
            if (answer.what == master_answer::kind::not_a_sentinel ||
                answer.what == master_answer::kind::unknown_master)
                config_problem = true;
            if (answer.what != master_answer::kind::address) continue;
            named = true;
            if (master_up() && master_->address == answer.address) {
                sentinels_.answered(at);
                co_return pass_succeeded();
            }
            if (co_await try_master(answer.address, "sentinel " + address_text(at), notes, last)) {
                sentinels_.answered(at);
                co_return pass_succeeded();
            }
        }
        if (!closed_) pass_failed(last, notes, config_problem, named);
    }

    // Asks the Sentinel at `at` for the master (and for the other Sentinels it knows, which it learns).
    asio::awaitable<master_answer> ask(const server_address& at, std::vector<std::string>& notes, error_code& last)
    {
        const auto who = address_text(at);
        // The watch's subscribed connection takes commands too (RESP3); else one for this question.
        std::shared_ptr<connection> watching;
        for (const auto& w : watches_)
            if (w->at == at && w->conn && w->conn->state() == connection_state::connected) watching = w->conn;
        auto conn = watching ? watching : std::make_shared<connection>(io_, config_of(at, true));
        probe_guard guard(*this, *conn);
        diagnostics diag;
        master_answer answer;
        answer.what = master_answer::kind::refused;
        auto [connect_ec] = co_await conn->async_connect(diag, use_tuple);
        if (connect_ec) {
            last = connect_ec;
            notes.push_back("sentinel " + who + ": " + message_of(diag, connect_ec));
            co_return answer;
        }
        request req;
        req.push("SENTINEL", "GET-MASTER-ADDR-BY-NAME", config_.sentinel_master);
        req.push("SENTINEL", "SENTINELS", config_.sentinel_master);
        req.set_timeout(config_.connect_timeout);
        response resp;
        auto [ec] = co_await conn->async_exec(req, resp, use_tuple);
        if (conn != watching) conn->close();
        if (resp.size() != 2) {
            last = ec ? ec : make_error_code(error::protocol_error);
            notes.push_back("sentinel " + who + ": " + last.message());
            co_return answer;
        }
        answer = read_master_answer(resp[0]);
        switch (answer.what) {
            case master_answer::kind::address:
                watch_all(sentinels_.learn(read_sentinels(resp[1])));
                break;
            case master_answer::kind::unknown_master:
                last = error::invalid_argument;
                notes.push_back("sentinel " + who + " knows no master named '" + config_.sentinel_master + "'");
                break;
            case master_answer::kind::not_a_sentinel:
                last = error::invalid_argument;
                notes.push_back(who + " is not a Redis Sentinel (SENTINEL: " + answer.text + ")");
                break;
            case master_answer::kind::refused:
                last = error::server_error;
                notes.push_back("sentinel " + who + " refused SENTINEL: " + answer.text);
                break;
            case master_answer::kind::malformed:
                last = error::protocol_error;
                notes.push_back("sentinel " + who + " answered SENTINEL GET-MASTER-ADDR-BY-NAME with " + answer.text);
                break;
        }
        co_return answer;
    }

    // Connects to `at` and makes it the master if ROLE says it is one.
    asio::awaitable<bool> try_master(const server_address& at, const std::string& by, std::vector<std::string>& notes,
                                     error_code& last)
    {
        auto link = std::make_shared<sentinel_master_link>(io_, config_of(at, false), at, ++next_generation_);
        // Tracking news only from the master in use: a lease's read goes there, not to this candidate.
        handlers_->forward_to(link->conn, [weak = weak_from_this(), generation = link->generation] {
            auto self = weak.lock();
            return self && self->installed_generation_.load(std::memory_order_relaxed) == generation;
        });
        link->conn.set_disconnect_handler([weak = weak_from_this(), generation = link->generation](error_code) {
            if (auto self = weak.lock()) asio::post(self->strand_, [self, generation] { self->link_down(generation); });
        });
        const auto what = "master " + address_text(at) + " (named by " + by + ")";
        {
            probe_guard guard(*this, link->conn);
            diagnostics diag;
            auto [connect_ec] = co_await link->conn.async_connect(diag, use_tuple);
            if (connect_ec) {
                last = connect_ec;
                notes.push_back(what + ": " + message_of(diag, connect_ec));
                link->conn.close();
                co_return false;
            }
            // Before any request: a Sentinel's answer may name a server demoted since.
            request role;
            role.push("ROLE");
            role.set_timeout(config_.connect_timeout);
            response resp;
            auto [ec] = co_await link->conn.async_exec(role, resp, use_tuple);
            const auto said = resp.empty() ? std::string() : read_role(resp.front());
            if (ec || said != "master") {
                if (ec) {
                    last = ec;
                    notes.push_back(what + ": ROLE failed: " +
                                    (resp.empty() || !resp.front().is_error() ? ec.message() : resp.front().text));
                } else {
                    last = error::not_connected;
                    ++refused_masters_;
                    notes.push_back(
                        what + " is no master now (ROLE: " + (said.empty() ? to_string(resp.front()) : said) + ")");
                }
                link->conn.close();
                co_return false;
            }
        }
        if (closed_) {
            link->conn.close();
            co_return false;
        }
        install(link);
        co_return true;
    }

    void pass_succeeded()
    {
        misconfigured_ = false;
        discover_failures_ = 0;
        last_failure_.clear();
        complete_connect_waiters({}, {});
        flush_pending_subscribes();
        pump();
    }

    void pass_failed(error_code last, const std::vector<std::string>& notes, bool config_problem, bool named)
    {
        if (master_up()) {
            // A check that found nothing better (a stale Sentinel named a demoted server): the master stays.
            complete_connect_waiters({}, {});
            flush_pending_subscribes();
            return;
        }
        const error_code ec = config_problem && !named ? make_error_code(error::invalid_argument) : last;
        last_failure_ = notes.empty() ? ec.message() : joined(notes);
        complete_connect_waiters(ec, last_failure_);
        flush_pending_subscribes();
        // A URL that names no Sentinel or no master: requests waiting for a first master fail as it does, and so do
        // the next ones until a pass finds one.
        misconfigured_ = ec == error::invalid_argument && !ever_found_;
        if (misconfigured_) lane_.drain([&](const op_ptr& op) { finish(op, ec); });
        auto delay = config_.reconnect_min_delay * (1 << std::min(discover_failures_++, 10));
        delay = std::min(delay, std::max(config_.reconnect_max_delay, config_.reconnect_min_delay));
        backoff_pending_ = true;
        backoff_timer_.expires_after(jittered(delay));
        backoff_timer_.async_wait([weak = weak_from_this(), generation = backoff_generation_](error_code ec) {
            auto self = weak.lock();
            if (ec || !self || generation != self->backoff_generation_) return;
            self->backoff_pending_ = false;
            if (!self->master_up() || self->hint_) self->request_discovery(false);
        });
    }

    void install(const link_ptr& link)
    {
        link_ptr old;
        {
            std::lock_guard lock(mutex_);
            old = std::exchange(master_, link);
            last_server_ = link->conn.server();
        }
        if (old) retire(old);
        ever_found_ = true;
        rehome_channels();
        // Another server, or the same after a reconnect: what it holds is unknown until read (and so tracked).
        installed_generation_.store(link->generation, std::memory_order_relaxed);
        handlers_->tell_all();
    }

    // Leaves `old` (no longer master_): its requests in flight fail (error::closed, given to callers as
    // connection_lost), its channels are subscribed nowhere.
    void retire(const link_ptr& old)
    {
        {
            std::lock_guard lock(mutex_);
            retired_usage_ += old->conn.get_usage();
        }
        old->conn.close();
        for (auto& [channel, home] : channel_homes_) {
            if (home == old->generation) home = 0;
        }
    }

    link_ptr take_master()
    {
        std::lock_guard lock(mutex_);
        return std::exchange(master_, nullptr);
    }

    // The master's connection dropped: ask where the master is now.
    void link_down(std::uint64_t generation)
    {
        if (closed_ || !master_ || master_->generation != generation) return;
        retire(take_master());
        request_discovery(true);
    }

    // A Sentinel says the master moved: leave the old one now, check the new one first.
    void on_switch(const switch_master& change)
    {
        if (closed_ || change.master != config_.sentinel_master) return;
        if (master_up() && master_->address == change.to) return;
        if (hint_ == change.to) return;  // another Sentinel's word for the switch under way
        hint_ = change.to;
        if (master_) retire(take_master());
        request_discovery(true);
    }

    void complete_waiter(connect_waiter& w, error_code ec, const std::string& why)
    {
        w.timer.cancel();
        if (w.diag != nullptr) {
            w.diag->clear();
            if (ec) access::set_client_message(*w.diag, name_ + ": " + why);
        }
        auto done = std::move(w.done);
        w.done.reset();
        if (done) done->complete(ec);
    }

    void complete_connect_waiters(error_code ec, const std::string& why)
    {
        auto waiters = std::move(connect_waiters_);
        connect_waiters_.clear();
        for (auto& w : waiters) complete_waiter(*w, ec, why);
    }

    // --- the +switch-master watch ----------------------------------------------------------------------------

    // Starts watching each Sentinel in `sentinels` (those known when the node starts, then each one learnt).
    void watch_all(const std::vector<server_address>& sentinels)
    {
        for (const auto& at : sentinels) {
            auto w = std::make_shared<sentinel_watch>(strand_, at);
            {
                std::lock_guard lock(mutex_);  // close() reads the list from any thread
                watches_.push_back(w);
            }
            asio::co_spawn(strand_, watch(w), [self = shared_from_this()](std::exception_ptr) {});
        }
    }

    // Keeps a connection to one Sentinel subscribed to +switch-master: every Sentinel the node knows has one, so the
    // first to publish a switch (the leader of the failover; the others follow it a moment later) is heard at once.
    // When the connection drops, it subscribes again after a backoff, then asks for the master again (a switch may
    // have been missed meanwhile).
    asio::awaitable<void> watch(std::shared_ptr<sentinel_watch> w)
    {
        int failures = 0;
        bool first = true;
        while (!closed_) {
            auto conn = std::make_shared<connection>(io_, config_of(w->at, true));
            conn->set_message_handler([weak = weak_from_this()](std::string_view channel, std::string_view payload) {
                if (channel != switch_master_channel) return;
                auto change = read_switch_master(payload);
                auto self = weak.lock();
                if (!change || !self) return;
                asio::post(self->strand_, [self, change = *std::move(change)] { self->on_switch(change); });
            });
            // The watch holds the connection: a handler holding the watch would keep both alive when the context is
            // destroyed with the coroutine suspended.
            conn->set_disconnect_handler([weak = weak_from_this(), weak_watch = std::weak_ptr(w)](error_code) {
                auto self = weak.lock();
                if (!self) return;
                asio::post(self->strand_, [weak_watch] {
                    if (auto watch = weak_watch.lock()) watch->wakeup.cancel();
                });
            });
            {
                std::lock_guard lock(mutex_);
                if (closed_) break;
                w->conn = conn;
            }
            diagnostics diag;
            auto [connect_ec] = co_await conn->async_connect(diag, use_tuple);
            error_code ec = connect_ec;
            if (!ec) {
                request subscribe;
                subscribe.push("SUBSCRIBE", switch_master_channel);
                subscribe.set_timeout(config_.connect_timeout);
                auto [subscribe_ec] = co_await conn->async_exec(subscribe, use_tuple);
                ec = subscribe_ec;
            }
            if (!ec) {
                failures = 0;
                if (!first) request_discovery(true);
                first = false;
                while (!closed_ && conn->state() == connection_state::connected) {
                    w->wakeup.expires_at(clock::time_point::max());
                    co_await w->wakeup.async_wait(use_tuple);
                }
            } else {
                // Down, or no Sentinel: again after the connection backoff.
                const auto delay = config_.reconnect_min_delay * (1 << std::min(failures++, 10));
                w->wakeup.expires_after(
                    jittered(std::min(delay, std::max(config_.reconnect_max_delay, config_.reconnect_min_delay))));
                co_await w->wakeup.async_wait(use_tuple);
            }
            {
                std::lock_guard lock(mutex_);
                w->conn.reset();
            }
            conn->close();
        }
    }

    // --- requests --------------------------------------------------------------------------------------------

    void issue(const op_ptr& op)
    {
        if (closed_) return finish(op, error::closed);
        op->seq = next_seq_++;
        op->deadline_timer.expires_at(op->deadline);
        op->deadline_timer.async_wait([weak = weak_from_this(), op](error_code ec) {
            if (auto self = weak.lock(); self && !ec) self->on_deadline(op);
        });
        lane_.wait(op->seq, op);
        pump();
    }

    // Sends what may go now, in issue order: to the master, once nothing is in flight at a master left behind.
    void pump()
    {
        while (lane_.has_waiting()) {
            auto& op = lane_.front();
            const auto now = clock::now();
            if (op->deadline <= now) {
                // Its deadline timer is late (a busy thread): sent now, it would run after its caller gave up.
                finish(lane_.take_front(), error::timeout);
                continue;
            }
            if (op->not_before > now) {
                wake_at(op, op->not_before);
                return;
            }
            if (!master_ && misconfigured_) {
                lane_.drain([&](const op_ptr& waiting) { finish(waiting, error::invalid_argument); });
                request_discovery(false);  // the URL may name a Sentinel that is being set up
                return;
            }
            if (!master_) {
                request_discovery(false);  // a pass runs or follows its backoff: it pumps when it finds one
                return;
            }
            if (!lane_.may_send_to(master_->key)) return;  // earlier requests are in flight at a master left
            if (op->refusal && lane_.later_ran(op->seq)) {
                // A later request, in flight when this one was refused, ran since: sent now, this one would run
                // after it.
                auto refused = lane_.take_front();
                finish(refused, refused->refusal);
                continue;
            }
            lane_.sent_to(master_->key);
            send(lane_.take_front(), master_);
        }
    }

    void wake_at(const op_ptr& op, clock::time_point when)
    {
        if (op->retry_timer) return;  // already set for its not_before
        op->retry_timer.emplace(strand_, when);
        op->retry_timer->async_wait([weak = weak_from_this(), op](error_code ec) {
            op->retry_timer.reset();
            if (auto self = weak.lock(); self && !ec && !op->done) self->pump();
        });
    }

    void send(const op_ptr& op, const link_ptr& link)
    {
        op->in_flight = true;
        // No cancellation crosses to the connection's strand (the connection assigns the slot there, the node
        // would emit here): each attempt carries the time left to the request's deadline as its own timeout, and
        // the connection ends it there.
        const auto left = std::max(std::chrono::ceil<std::chrono::milliseconds>(op->deadline - clock::now()), 1ms);
        auto on_answer = asio::bind_executor(
            strand_, [self = shared_from_this(), op, link](error_code ec) { self->on_answer(op, link, ec); });
        if (left < op->timeout) {
            op->attempt = *op->req;
            op->attempt.set_timeout(left);
            link->conn.async_exec(op->attempt, *op->resp, std::move(on_answer));
        } else {
            link->conn.async_exec(*op->req, *op->resp, std::move(on_answer));
        }
    }

    void on_answer(const op_ptr& op, const link_ptr& link, error_code ec)
    {
        op->in_flight = false;
        lane_.answered();
        const bool refused =
            ec == error::not_connected || (ec == error::server_error && not_master_refusal(*op->resp) != nullptr);
        if (!refused) lane_.ran(op->seq);  // it reached a master: it may have run (a timeout, a lost connection too)
        if (op->timed_out) {
            finish(op, error::timeout);
        } else if (closed_) {
            finish(op, error::closed);
        } else if (!retry_after(op, link, ec)) {
            // Closed by the node, which left that master (a failover): the request may have run there.
            finish(op, ec == error::closed ? make_error_code(error::connection_lost) : ec);
        }
        pump();
    }

    // Whether `op`'s outcome `ec` at `link` means it did not run and may go to the master found next; if so,
    // queues it again.
    bool retry_after(const op_ptr& op, const link_ptr& link, error_code ec)
    {
        const bool current = master_ == link;
        if (ec == error::not_connected) {
            // Never sent: that master's connection is down.
            if (current) link_down(link->generation);
        } else if (ec == error::server_error && not_master_refusal(*op->resp) != nullptr) {
            // READONLY, LOADING, MASTERDOWN: no write ran. The server is no master (now): ask again.
            if (current) {
                retire(take_master());
                request_discovery(true);
            }
        } else {
            return false;
        }
        const auto now = clock::now();
        op->not_before = op->retries == 0 ? now : now + backoff(op->retries);
        ++op->retries;
        // A retry that cannot start before the deadline, or would run after a later request that ran: the refusal
        // is the answer. (pump checks the second again when it is about to send it.)
        if (op->not_before >= op->deadline || lane_.later_ran(op->seq)) return false;
        op->refusal = ec;
        lane_.wait(op->seq, op);
        return true;
    }

    std::chrono::milliseconds backoff(unsigned retries) const
    {
        auto delay = first_retry_delay * (1u << std::min(retries, 8u));
        return jittered(std::min({delay, max_retry_delay, std::max(config_.reconnect_max_delay, first_retry_delay)}));
    }

    void on_deadline(const op_ptr& op)
    {
        if (op->done) return;
        if (op->in_flight) {
            // Its attempt's own timeout ends at the same deadline: the connection completes it then (removed, or
            // abandoned once written), and keeps `req` and `resp` until then, so the caller's completion waits.
            op->timed_out = true;
            return;
        }
        lane_.remove(op);
        finish(op, error::timeout);
        pump();
    }

    void finish(const op_ptr& op, error_code ec)
    {
        if (op->done) return;
        op->done = true;
        op->deadline_timer.cancel();
        if (op->retry_timer) op->retry_timer->cancel();
        op->completion.complete(ec);
    }

    // --- subscriptions ---------------------------------------------------------------------------------------

    void subscribe_on_strand(std::vector<std::string> channels, diagnostics* diag,
                             std::shared_ptr<pending_completion<>> done, bool may_wait)
    {
        if (closed_) return done->complete(error::closed);
        if (channels.empty()) return done->complete(error::invalid_argument);
        auto link = master_;
        if (!link) {
            if (misconfigured_) return done->complete(error::invalid_argument);
            if (!may_wait) return done->complete(error::not_connected);
            // No master now: subscribe once the pass under way (or the next) ends, successful or not.
            pending_subscribes_.push_back(pending_subscribe{std::move(channels), diag, std::move(done)});
            return request_discovery(false);
        }
        link->conn.async_subscribe(
            channels, *diag,
            asio::bind_executor(strand_, [self = shared_from_this(), channels, link, done](error_code ec) {
                if (!ec) {
                    // At a master left meanwhile: the new one gets it (rehome).
                    const auto home = self->master_ == link ? link->generation : 0;
                    for (const auto& channel : channels) self->channel_homes_[channel] = home;
                    if (home == 0) self->rehome_channels();
                }
                done->complete(ec);
            }));
    }

    void flush_pending_subscribes()
    {
        auto pending = std::move(pending_subscribes_);
        pending_subscribes_.clear();
        for (auto& p : pending) subscribe_on_strand(std::move(p.channels), p.diag, std::move(p.done), false);
    }

    // Subscribes at the master every held channel not subscribed there (a new master, or one that was left),
    // one hash slot a call, as SSUBSCRIBE takes them.
    void rehome_channels()
    {
        auto link = master_;
        if (closed_ || !link) return;
        std::map<std::uint16_t, std::vector<std::string>> by_slot;
        for (auto& [channel, home] : channel_homes_) {
            if (home == link->generation) continue;
            by_slot[key_slot(channel)].push_back(channel);
            home = 0;
        }
        for (auto& slot_channels : by_slot) {
            auto& group = slot_channels.second;
            auto diag = std::make_shared<diagnostics>();
            link->conn.async_subscribe(
                group, *diag,
                asio::bind_executor(strand_, [self = shared_from_this(), group, link, diag](error_code ec) {
                    // Failed: the link is going (its drop asks for a new master, which subscribes them again).
                    if (ec || self->master_ != link) return;
                    for (const auto& channel : group) {
                        // Unsubscribed meanwhile: the caller no longer wants it.
                        auto at = self->channel_homes_.find(channel);
                        if (at != self->channel_homes_.end()) at->second = link->generation;
                    }
                }));
        }
    }

    // --- close -----------------------------------------------------------------------------------------------

    void close_on_strand()
    {
        backoff_timer_.cancel();
        for (auto& w : watches_) w->wakeup.cancel();
        complete_connect_waiters(error::closed, "closed");
        auto pending = std::move(pending_subscribes_);
        pending_subscribes_.clear();
        for (auto& p : pending) p.done->complete(error::closed);
        lane_.drain([&](const op_ptr& op) { finish(op, error::closed); });
        // In flight: the master's connection, closed, completes them with error::closed.
    }

    asio::any_io_executor io_;
    strand_type strand_;
    node_config config_;
    std::string name_;
    std::atomic<bool> closed_{false};
    std::atomic<std::uint64_t> installed_generation_{0};  // master_'s: the link whose tracking news counts

    sentinel_list sentinels_;
    std::optional<server_address> hint_;  // the new master of a +switch-master, tried first
    std::uint64_t next_generation_ = 0;
    bool ever_found_ = false;
    bool misconfigured_ = false;       // the last pass failed for the URL (no Sentinel, no such master), none found yet
    std::size_t refused_masters_ = 0;  // masters a Sentinel named that ROLE refused

    bool discovering_ = false;
    bool discover_again_ = false;
    bool again_urgent_ = false;
    bool backoff_pending_ = false;
    std::uint64_t backoff_generation_ = 0;
    int discover_failures_ = 0;
    asio::steady_timer backoff_timer_;
    std::string last_failure_;
    std::vector<std::shared_ptr<connect_waiter>> connect_waiters_;

    issue_lane<op_ptr> lane_;
    std::uint64_t next_seq_ = 0;

    std::shared_ptr<node_handlers> handlers_;
    std::map<std::string, std::uint64_t>
        channel_homes_;  // channel -> the link generation it is subscribed at (0: none)
    std::vector<pending_subscribe> pending_subscribes_;

    mutable std::mutex mutex_;  // what other threads read or close: the links below, the usage
    link_ptr master_;
    server_identity last_server_;
    usage retired_usage_;
    std::set<connection*> probes_;
    std::vector<std::shared_ptr<sentinel_watch>> watches_;  // one per Sentinel known; read on the strand, or locked
};

sentinel_node::sentinel_node(const asio::any_io_executor& ex, const node_config& config)
    : state_(std::make_shared<sentinel_state>(ex, config))
{
    shutdown_registry::enroll(ex, state_);
    state_->start();
}

sentinel_node::~sentinel_node()
{
    state_->close();
}

std::string sentinel_node::name() const
{
    return state_->name();
}

void sentinel_node::async_connect(diagnostics& diag, completion handler)
{
    state_->connect(&diag, std::move(handler));
}

void sentinel_node::async_exec(const request& req, response& resp, std::string_view, completion handler)
{
    state_->exec(req, resp, std::move(handler));
}

void sentinel_node::async_subscribe(std::vector<std::string> channels, diagnostics& diag, completion handler)
{
    state_->subscribe(std::move(channels), &diag, std::move(handler));
}

void sentinel_node::async_unsubscribe(std::vector<std::string> channels, completion handler)
{
    state_->unsubscribe(std::move(channels), std::move(handler));
}

void sentinel_node::set_message_handler(message_handler handler)
{
    state_->set_message_handler(std::move(handler));
}

void sentinel_node::set_tracking_handler(tracking_handler handler)
{
    state_->set_tracking_handler(std::move(handler));
}

server_identity sentinel_node::server() const
{
    return state_->server();
}

usage sentinel_node::get_usage() const
{
    return state_->get_usage();
}

void sentinel_node::close()
{
    state_->close();
}

std::unique_ptr<node> make_sentinel_node(const asio::any_io_executor& ex, const node_config& config)
{
    return std::make_unique<sentinel_node>(ex, config);
}

}  // namespace redlock::detail
