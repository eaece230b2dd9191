#include "cluster/asking_request.hpp"
#include "cluster/cluster_node.hpp"
#include "cluster/refusal.hpp"
#include "cluster/slot_map.hpp"
#include "common/completion.hpp"
#include "common/issue_lane.hpp"
#include "common/key_slot.hpp"
#include "common/node_handlers.hpp"
#include "common/shutdown_registry.hpp"

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
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <unordered_map>

namespace redlock::detail {

namespace asio = boost::asio;
using clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

namespace {

// Requests without a routing key share one lane of their own (their keys, if any, span slots: the caller's
// business), sent to the first master of the map.
constexpr std::uint32_t keyless_lane = cluster_slots;
// MOVED and ASK in a row for one request before its refusal is returned as it is: a map that keeps changing
// under it is a cluster in trouble, not a route to follow forever.
constexpr unsigned max_redirects = 16;
constexpr auto first_retry_delay = 10ms;
constexpr auto max_retry_delay = 500ms;
constexpr auto periodic_refresh = 30s;

std::chrono::milliseconds jittered(std::chrono::milliseconds base)
{
    thread_local std::minstd_rand random(std::random_device{}());
    std::uniform_int_distribution<std::int64_t> spread(0, std::max<std::int64_t>(base.count() / 4, 1));
    return base + std::chrono::milliseconds(spread(random));
}

// The server's words for a member started without cluster support.
bool says_cluster_disabled(std::string_view text)
{
    return text.find("cluster support disabled") != std::string_view::npos;
}

}  // namespace

/// One master: its address and its pipelined connection.
struct master_link {
    master_link(const asio::any_io_executor& ex, node_config config, master_address at)
        : address(std::move(at)), key(address.text()), conn(ex, std::move(config))
    {}
    master_address address;
    std::string key;  // address.text()
    connection conn;
};

/// One async_exec: the caller's request and reply, where it stands, its deadline.
struct cluster_exec {
    cluster_exec(const asio::any_io_executor& strand, const request& r, response& out, node::completion handler,
                 const asio::any_io_executor& io)
        : req(&r), resp(&out), deadline_timer(strand), completion(std::move(handler), io)
    {}
    const request* req;
    response* resp;
    std::uint32_t lane = keyless_lane;
    std::uint64_t seq = 0;
    clock::time_point deadline;
    clock::time_point not_before{};
    asio::steady_timer deadline_timer;
    std::optional<asio::steady_timer> retry_timer;
    pending_completion<> completion;
    std::optional<master_address> ask_target;    // the next attempt goes there with ASKING
    std::optional<master_address> moved_target;  // keyless: where MOVED sent it (a keyed one follows the map)
    std::chrono::milliseconds timeout{};         // the whole request's: each attempt gets what is left of it
    request attempt;                             // a copy of *req with the time left, for an attempt sent later
    request asking;
    response asking_resp;
    bool asked = false;  // the attempt in flight is an ASKING one
    unsigned redirects = 0;
    unsigned retries = 0;
    unsigned sends = 0;       // attempts sent so far: one sent again must not overtake a later request that ran
    error_code refused_with;  // the last attempt's refusal: the answer when it cannot be sent again
    bool in_flight = false;
    bool timed_out = false;
    bool done = false;
};

/// Everything the node knows, on its strand (but what the mutexes guard, which other threads read).
class cluster_state : public std::enable_shared_from_this<cluster_state>, public shutdown_participant {
public:
    cluster_state(const asio::any_io_executor& ex, const node_config& config)
        : io_(ex),
          strand_(make_strand_of(ex)),
          config_(config),
          name_(config.to_string()),
          refresh_timer_(strand_),
          handlers_(std::make_shared<node_handlers>())
    {}

    const std::string& name() const { return name_; }

    void start()
    {
        asio::post(strand_, [self = shared_from_this()] { self->request_refresh(); });
    }

    // --- connect ---------------------------------------------------------------------------------------------

    void connect(diagnostics* diag, node::completion handler)
    {
        auto done = std::make_shared<pending_completion<>>(std::move(handler), io_);
        asio::post(strand_, [self = shared_from_this(), diag, done] {
            if (self->closed_) return done->complete(error::closed);
            if (!self->map_.empty() && self->all_links_connected()) return done->complete({});
            self->connect_waiters_.push_back(connect_waiter{diag, done});
            self->request_refresh(true);
        });
    }

    // --- exec ------------------------------------------------------------------------------------------------

    void exec(const request& req, response& resp, std::string_view routing_key, node::completion handler)
    {
        auto op = std::make_shared<cluster_exec>(strand_, req, resp, std::move(handler), io_);
        op->lane = routing_key.empty() ? keyless_lane : key_slot(routing_key);
        op->timeout = req.timeout().count() > 0 ? req.timeout() : config_.request_timeout;
        op->deadline = clock::now() + op->timeout;
        asio::post(strand_, [self = shared_from_this(), op] { self->issue(op); });
    }

    // --- pub/sub ---------------------------------------------------------------------------------------------

    void subscribe(std::vector<std::string> channels, diagnostics* diag, node::completion handler)
    {
        auto done = std::make_shared<pending_completion<>>(std::move(handler), io_);
        asio::post(strand_, [self = shared_from_this(), channels = std::move(channels), diag, done]() mutable {
            // Wanted from now on, until an unsubscribe: a confirmation that comes after one is not kept.
            std::vector<std::uint64_t> wants;
            for (const auto& channel : channels) wants.push_back(self->wanted_[channel] = ++self->last_want_);
            auto call = std::make_shared<subscribe_call>(subscribe_call{
                std::move(channels), std::move(wants), diag, done, clock::now() + self->config_.request_timeout});
            self->subscribe_on_strand(std::move(call), true);
        });
    }

    void unsubscribe(std::vector<std::string> channels, node::completion handler)
    {
        auto done = std::make_shared<pending_completion<>>(std::move(handler), io_);
        asio::post(strand_, [self = shared_from_this(), channels = std::move(channels), done]() mutable {
            self->unsubscribe_on_strand(std::move(channels), done);
        });
    }

    void resubscribe(std::vector<std::string> channels, std::string from)
    {
        asio::post(strand_, [self = shared_from_this(), channels = std::move(channels), from = std::move(from)] {
            for (const auto& channel : channels) {
                // Only its home can lose it: news from a master it already left (a late `sunsubscribe`) is old.
                auto at = self->channel_homes_.find(channel);
                if (at != self->channel_homes_.end() && at->second == from) at->second.clear();
            }
            self->rehome_channels();
        });
    }

    void set_message_handler(node::message_handler handler) { handlers_->set_message_handler(std::move(handler)); }
    void set_tracking_handler(node::tracking_handler handler) { handlers_->set_tracking_handler(std::move(handler)); }

    // --- any thread ------------------------------------------------------------------------------------------

    server_identity server() const
    {
        std::lock_guard lock(links_mutex_);
        for (const auto& [key, link] : links_) {
            if (auto identity = link->conn.server(); identity.known()) return identity;
        }
        return {};
    }

    usage get_usage() const
    {
        std::lock_guard lock(links_mutex_);
        usage total = retired_usage_;
        for (const auto& [key, link] : links_) total += link->conn.get_usage();
        return total;
    }

    /// The context shuts down: requests waiting in a lane and connect waiters go, uncompleted (one owning the
    /// frame that owns this node would keep both alive). Those in flight are the connections' to drop.
    void drop_handlers() noexcept override
    {
        auto lanes = std::move(lanes_);
        lanes_.clear();
        auto waiters = std::move(connect_waiters_);
        connect_waiters_.clear();
    }

    void close()
    {
        if (closed_.exchange(true)) return;
        {
            std::lock_guard lock(links_mutex_);
            for (auto& [key, link] : links_) link->conn.close();  // in flight: error::closed
        }
        asio::post(strand_, [self = shared_from_this()] { self->close_on_strand(); });
    }

private:
    struct connect_waiter {
        diagnostics* diag;
        std::shared_ptr<pending_completion<>> done;
    };
    using op_ptr = std::shared_ptr<cluster_exec>;

    // --- links -----------------------------------------------------------------------------------------------

    node_config config_of(const master_address& address) const
    {
        node_config c = config_;
        c.host = address.host;
        c.port = address.port;
        c.cluster = false;
        c.cluster_seeds.clear();
        return c;
    }

    std::shared_ptr<master_link> find_link(const std::string& key) const
    {
        std::lock_guard lock(links_mutex_);
        auto at = links_.find(key);
        return at == links_.end() ? nullptr : at->second;
    }

    // The link to `address`, opened when there is none (a master learnt from the map or a redirect).
    std::shared_ptr<master_link> link_to(const master_address& address)
    {
        const auto key = address.text();
        if (auto link = find_link(key)) return link;
        auto link = std::make_shared<master_link>(io_, config_of(address), address);
        handlers_->forward_to(link->conn);
        // The master dropped channels whose slot moved away (a failover, a migration): the map is stale too.
        link->conn.set_subscription_lost_handler(
            [weak = weak_from_this(), from = link->key](std::vector<std::string> channels) {
                auto self = weak.lock();
                if (!self) return;
                asio::post(self->strand_, [self] { self->request_refresh(); });
                self->resubscribe(std::move(channels), from);
            });
        link->conn.async_connect([](error_code) {});  // it keeps reconnecting on its own
        std::lock_guard lock(links_mutex_);
        if (closed_) link->conn.close();
        links_.emplace(key, link);
        return link;
    }

    // Closes the links to servers that are no master in the map any more; requests in flight there keep theirs.
    void drop_links_outside(const slot_map& map)
    {
        std::vector<std::shared_ptr<master_link>> dropped;
        {
            std::lock_guard lock(links_mutex_);
            for (auto at = links_.begin(); at != links_.end();) {
                const bool master =
                    std::find(map.masters().begin(), map.masters().end(), at->second->address) != map.masters().end();
                if (master) {
                    ++at;
                    continue;
                }
                retired_usage_ += at->second->conn.get_usage();
                dropped.push_back(at->second);
                at = links_.erase(at);
            }
        }
        // A request still in flight there holds the link; it completes, then the connection goes with it.
        for (auto& link : dropped) {
            if (link.use_count() == 1) link->conn.close();
        }
    }

    bool all_links_connected() const
    {
        std::lock_guard lock(links_mutex_);
        return std::all_of(links_.begin(), links_.end(),
                           [](const auto& entry) { return entry.second->conn.state() == connection_state::connected; });
    }

    // The master a request of `lane` goes to now, or null when no map is known yet.
    std::shared_ptr<master_link> owner_of(std::uint32_t lane)
    {
        if (map_.empty()) return nullptr;
        const master_address* owner = lane == keyless_lane ? nullptr : map_.owner(static_cast<std::uint16_t>(lane));
        // An uncovered slot goes to any master, which answers CLUSTERDOWN: the server's own words for it.
        if (owner == nullptr) owner = &map_.masters().front();
        return link_to(*owner);
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
        lanes_[op->lane].wait(op->seq, op);
        pump(op->lane);
    }

    // Sends what lane `id` may send now, in issue order.
    void pump(std::uint32_t id)
    {
        auto at = lanes_.find(id);
        if (at == lanes_.end()) return;
        auto& lane = at->second;
        while (lane.has_waiting()) {
            auto& op = lane.front();
            if (op->sends > 0) {
                // Refused before: a later request of its slot that ran would run before it (the node contract).
                if (lane.later_ran(op->seq)) {
                    auto refused = lane.take_front();
                    finish(refused, refused->refused_with);
                    continue;
                }
                if (lane.in_flight() > 0) break;  // a later request in flight may yet run: its answer decides
            }
            const auto now = clock::now();
            if (op->deadline <= now) {
                // Its deadline timer is late (a busy thread): sent now, it would run after its caller gave up.
                finish(lane.take_front(), error::timeout);
                continue;
            }
            if (op->not_before > now) {
                wake_at(op, op->not_before);
                break;
            }
            auto link = op->ask_target     ? link_to(*op->ask_target)
                        : op->moved_target ? link_to(*op->moved_target)
                                           : owner_of(id);
            if (!link) {
                request_refresh();  // no map yet: the refresh pumps every lane when it has one
                break;
            }
            if (!lane.may_send_to(link->key)) break;  // earlier requests are in flight at another master
            lane.sent_to(link->key);
            send(lane.take_front(), link);
        }
        if (lane.idle()) lanes_.erase(at);
    }

    void wake_at(const op_ptr& op, clock::time_point when)
    {
        if (op->retry_timer) return;  // already set for its not_before
        op->retry_timer.emplace(strand_, when);
        op->retry_timer->async_wait([weak = weak_from_this(), op](error_code ec) {
            op->retry_timer.reset();
            if (auto self = weak.lock(); self && !ec && !op->done) self->pump(op->lane);
        });
    }

    void send(const op_ptr& op, const std::shared_ptr<master_link>& link)
    {
        op->in_flight = true;
        ++op->sends;
        op->asked = op->ask_target.has_value();
        op->ask_target.reset();  // ASK holds for one attempt
        // No cancellation crosses to the connection's strand: each attempt carries the time left to the request's
        // deadline as its own timeout, and the connection ends it there.
        const auto left = std::max(std::chrono::ceil<std::chrono::milliseconds>(op->deadline - clock::now()), 1ms);
        auto on_answer = asio::bind_executor(
            strand_, [self = shared_from_this(), op, link](error_code ec) { self->on_answer(op, *link, ec); });
        if (op->asked) {
            op->asking = asking_request(*op->req);
            op->asking.set_timeout(left);
            link->conn.async_exec(op->asking, op->asking_resp, std::move(on_answer));
        } else if (left < op->timeout) {
            op->attempt = *op->req;
            op->attempt.set_timeout(left);
            link->conn.async_exec(op->attempt, *op->resp, std::move(on_answer));
        } else {
            link->conn.async_exec(*op->req, *op->resp, std::move(on_answer));
        }
    }

    void on_answer(const op_ptr& op, const master_link& link, error_code ec)
    {
        op->in_flight = false;
        if (auto at = lanes_.find(op->lane); at != lanes_.end()) at->second.answered();
        if (op->asked) {
            // ASKING's own reply first, then the request's.
            op->resp->assign(std::make_move_iterator(op->asking_resp.begin() + (op->asking_resp.empty() ? 0 : 1)),
                             std::make_move_iterator(op->asking_resp.end()));
            op->asking_resp.clear();
        }
        bool refused = false;
        if (op->timed_out) {
            finish(op, error::timeout);
        } else if (closed_) {
            finish(op, error::closed);
        } else if (!retry_after(op, link, ec, refused)) {
            finish(op, ec);
        }
        // What was not refused reached its master and may have run: an earlier refused request must not follow it.
        if (!refused) {
            if (auto at = lanes_.find(op->lane); at != lanes_.end()) at->second.ran(op->seq);
        }
        pump(op->lane);
    }

    // Whether `op`'s outcome `ec` at `link` is a refusal to follow; if so, queues it again. `refused`: it did not
    // run there (a refusal, or never sent), followed or not.
    bool retry_after(const op_ptr& op, const master_link& link, error_code ec, bool& refused)
    {
        std::optional<cluster_refusal> refusal;
        if (ec == error::server_error) refusal = read_refusal(*op->resp, link.address.host);
        refused = refusal.has_value() || ec == error::not_connected;
        if (refused) op->refused_with = ec;
        auto now = clock::now();
        if (refusal) {
            switch (refusal->what) {
                case cluster_refusal::kind::moved:
                    if (++op->redirects > max_redirects) return false;
                    map_.assign(refusal->slot, refusal->target);  // right away; the full read follows
                    if (op->lane == keyless_lane) op->moved_target = refusal->target;  // no slot of its own to follow
                    request_refresh();
                    op->not_before = now;
                    break;
                case cluster_refusal::kind::ask:
                    if (++op->redirects > max_redirects) return false;
                    op->ask_target = refusal->target;
                    op->not_before = now;
                    break;
                case cluster_refusal::kind::cluster_down:
                    request_refresh();
                    [[fallthrough]];
                case cluster_refusal::kind::try_again:
                    op->redirects = 0;  // redirects count in a row
                    op->not_before = now + backoff(op->retries++);
                    break;
            }
        } else if (ec == error::not_connected) {
            // Never sent: its master is down. A failover gives the slot to a replica; the map will say which.
            request_refresh();
            op->redirects = 0;
            op->not_before = now + backoff(op->retries++);
        } else {
            // connection_lost: it may have run, so the caller decides; the map may have changed under it.
            if (ec == error::connection_lost) request_refresh();
            return false;
        }
        // A retry that cannot start before the deadline: the refusal is the answer.
        if (op->not_before >= op->deadline) return false;
        lanes_[op->lane].wait(op->seq, op);
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
        if (auto at = lanes_.find(op->lane); at != lanes_.end()) at->second.remove(op);
        finish(op, error::timeout);
        pump(op->lane);
    }

    void finish(const op_ptr& op, error_code ec)
    {
        if (op->done) return;
        op->done = true;
        op->deadline_timer.cancel();
        if (op->retry_timer) op->retry_timer->cancel();
        op->completion.complete(ec);
    }

    // --- the slot map ----------------------------------------------------------------------------------------

    // Reads the map now (or after the running read). While reads are failing, only the backoff's timer (`due`) and a
    // caller's async_connect start one: a refused request's or a redirect's wish waits for it, so an outage costs a
    // read per backoff step (reconnect_min_delay, doubling up to reconnect_max_delay), not one per retry.
    void request_refresh(bool due = false)
    {
        if (closed_) return;
        if (!due && refresh_failures_ > 0) return;  // refresh_failed scheduled the next read
        if (refreshing_) {
            refresh_again_ = true;  // what the running read sees may predate the cause of this one
            return;
        }
        refreshing_ = true;
        asio::co_spawn(strand_, refresh(), [self = shared_from_this()](std::exception_ptr failure) {
            self->refreshing_ = false;
            if (failure) self->refresh_failed(error::protocol_error, "reading the slot map failed");
            if (self->refresh_again_) {
                self->refresh_again_ = false;
                self->request_refresh();
            }
        });
    }

    // Members to read the map through: the masters whose connections are up, then the URL's host and its seeds,
    // then the other masters (a killed master's connection would only wait for its next attempt).
    std::vector<master_address> map_sources() const
    {
        std::vector<master_address> out;
        auto add_source = [&out](const master_address& a) {
            if (std::find(out.begin(), out.end(), a) == out.end()) out.push_back(a);
        };
        for (const auto& master : map_.masters()) {
            auto link = find_link(master.text());
            if (link && link->conn.state() == connection_state::connected) add_source(master);
        }
        add_source({config_.host, config_.port});
        for (const auto& seed : config_.cluster_seeds) add_source({seed.host, seed.port});
        for (const auto& master : map_.masters()) add_source(master);
        return out;
    }

    // One map read: its sources race, staggered; the first map read wins.
    struct map_race {
        explicit map_race(const strand_type& strand) : done(strand, clock::time_point::max()) {}
        void end()
        {
            over = true;
            done.cancel();
        }
        std::size_t left = 0;
        bool over = false;
        std::optional<slot_map> read;
        error_code last = error::not_connected;
        std::string why;
        bool not_a_cluster = false;
        asio::steady_timer done;  // cancelled when the race is over
    };

    // Reads the map through the sources in their order, staggered: the first (a master whose connection is up,
    // usually) answers within a round trip and the others never start; a silent one costs the next a short delay,
    // not its whole connect timeout, so the read (and async_connect) ends within connect_timeout.
    asio::awaitable<void> refresh()
    {
        const auto sources = map_sources();
        auto race = std::make_shared<map_race>(strand_);
        race->left = sources.size();
        const auto stagger = std::min<std::chrono::milliseconds>(config_.connect_timeout / 8, 100ms);
        for (std::size_t i = 0; i < sources.size(); ++i) {
            asio::co_spawn(strand_, read_map_from(sources[i], stagger * static_cast<int>(i), race),
                           [self = shared_from_this(), race](std::exception_ptr) {
                               if (--race->left == 0) race->end();
                           });
        }
        if (!race->over) co_await race->done.async_wait(asio::as_tuple(asio::use_awaitable));
        if (closed_) co_return;
        if (!race->read) {
            if (race->not_a_cluster) map_ = slot_map{};
            refresh_failed(race->last, race->why);
            co_return;
        }
        apply(*std::move(race->read));
        if (!connect_waiters_.empty()) connect_links();
    }

    asio::awaitable<void> read_map_from(master_address source, std::chrono::milliseconds delay,
                                        std::shared_ptr<map_race> race)
    {
        if (delay.count() > 0) {
            asio::steady_timer wait(strand_, delay);
            co_await wait.async_wait(asio::as_tuple(asio::use_awaitable));
        }
        if (race->over || closed_) co_return;
        // A master's own connection when it is up; else one for this read only, which fails fast.
        auto link = find_link(source.text());
        if (link && link->conn.state() != connection_state::connected) link.reset();
        std::optional<connection> temporary;
        connection* conn = link ? &link->conn : nullptr;
        if (conn == nullptr) {
            auto c = config_of(source);
            c.reconnect = false;
            c.track_keys = false;  // it reads the map only
            temporary.emplace(io_, c);
            conn = &*temporary;
        }
        diagnostics diag;
        auto [connect_ec] = co_await conn->async_connect(diag, asio::as_tuple(asio::use_awaitable));
        if (race->over || closed_) co_return;
        if (connect_ec) {
            race->last = connect_ec;
            race->why =
                source.text() + ": " + std::string(diag.message().empty() ? connect_ec.message() : diag.message());
            co_return;
        }
        request req;
        const auto server = conn->server();  // not known yet: CLUSTER SHARDS, CLUSTER SLOTS after its refusal
        const bool shards = !server.known() || server.has_cluster_shards();
        req.push("CLUSTER", shards ? "SHARDS" : "SLOTS");
        req.set_timeout(config_.request_timeout);
        response resp;
        auto [ec] = co_await conn->async_exec(req, resp, asio::as_tuple(asio::use_awaitable));
        if (temporary) temporary->close();
        if (race->over || closed_) co_return;
        const auto text = resp.empty() ? std::string_view() : resp.front().error_text();
        if (says_cluster_disabled(text)) {
            race->not_a_cluster = true;
            race->last = error::invalid_argument;
            race->why = source.text() +
                        " is not a Redis Cluster member (cluster support disabled): check the URL's "
                        "redis+cluster:// scheme and its seeds";
            race->end();  // a wrong URL, not a member that is down
            co_return;
        }
        if (ec || resp.empty()) {
            race->last = ec ? ec : error_code(error::protocol_error);
            race->why = source.text() + ": CLUSTER " + (shards ? "SHARDS" : "SLOTS") + " failed" +
                        (text.empty() ? std::string() : ": " + std::string(text));
            co_return;
        }
        std::string why;
        const slot_map_source how{source.host, config_.kind == node_config::transport::tls};
        auto read = shards ? read_cluster_shards(resp.front(), how, why) : read_cluster_slots(resp.front(), how, why);
        if (!read) {
            race->last = error::protocol_error;
            race->why = source.text() + ": " + why;
            co_return;
        }
        race->read = std::move(read);
        race->end();
    }

    void apply(slot_map map)
    {
        map_ = std::move(map);
        for (const auto& master : map_.masters()) link_to(master);
        drop_links_outside(map_);
        refresh_failures_ = 0;
        schedule_refresh(jittered(periodic_refresh));
        std::vector<std::uint32_t> waiting;
        for (const auto& [id, lane] : lanes_) waiting.push_back(id);
        for (auto id : waiting) pump(id);
        rehome_channels();  // also the channels subscribed nowhere: their last try failed
    }

    // The connect waiters' answer: every master's connection up (all tried at once, each within connect_timeout),
    // or the first that is not, with its text.
    void connect_links()
    {
        struct gather {
            std::size_t left;
            error_code failed;
            std::string why;
        };
        std::vector<std::shared_ptr<master_link>> links;
        for (const auto& master : map_.masters()) links.push_back(link_to(master));
        auto all = std::make_shared<gather>(gather{links.size(), {}, {}});
        if (links.empty()) return complete_connect_waiters({}, {});
        for (auto& link : links) {
            auto diag = std::make_shared<diagnostics>();
            link->conn.async_connect(
                *diag, asio::bind_executor(strand_, [self = shared_from_this(), all, diag, link](error_code ec) {
                    if (ec && !all->failed) {
                        all->failed = ec;
                        all->why = "master " + link->key + ": " +
                                   std::string(diag->message().empty() ? ec.message() : diag->message());
                    }
                    if (--all->left == 0) self->complete_connect_waiters(all->failed, all->why);
                }));
        }
    }

    void refresh_failed(error_code ec, const std::string& why)
    {
        complete_connect_waiters(ec, why);
        if (map_.empty()) {
            // Nothing to route by: requests waiting for a first map fail as a connection's do when it is down.
            std::vector<std::uint32_t> ids;
            for (auto& [id, lane] : lanes_) ids.push_back(id);
            for (auto id : ids) {
                auto& lane = lanes_[id];
                lane.drain(
                    [&](const op_ptr& op) { finish(op, ec == error::invalid_argument ? ec : error::not_connected); });
                if (lane.idle()) lanes_.erase(id);
            }
        }
        auto delay = config_.reconnect_min_delay * (1 << std::min(refresh_failures_++, 10));
        schedule_refresh(std::min(delay, std::max(config_.reconnect_max_delay, config_.reconnect_min_delay)));
    }

    void complete_connect_waiters(error_code ec, const std::string& why)
    {
        auto waiters = std::move(connect_waiters_);
        connect_waiters_.clear();
        for (auto& w : waiters) {
            if (w.diag != nullptr) {
                w.diag->clear();
                if (ec) access::set_client_message(*w.diag, name_ + ": " + why);
            }
            w.done->complete(ec);
        }
    }

    void schedule_refresh(std::chrono::milliseconds after)
    {
        if (closed_) return;
        refresh_timer_.expires_after(after);
        refresh_timer_.async_wait([weak = weak_from_this()](error_code ec) {
            if (auto self = weak.lock(); self && !ec) self->request_refresh(true);
        });
    }

    // --- subscriptions ---------------------------------------------------------------------------------------

    // Whether `channel` is still wanted as the subscription numbered `want` asked it (no unsubscribe since).
    bool still_wanted(const std::string& channel, std::uint64_t want) const
    {
        auto at = wanted_.find(channel);
        return at != wanted_.end() && at->second == want;
    }

    // One async_subscribe: its channels, what each is wanted as, its deadline and redirects so far.
    struct subscribe_call {
        std::vector<std::string> channels;
        std::vector<std::uint64_t> wants;
        diagnostics* diag;
        std::shared_ptr<pending_completion<>> done;
        clock::time_point deadline;
        unsigned redirects = 0;
    };

    void subscribe_on_strand(std::shared_ptr<subscribe_call> call, bool wait_for_map)
    {
        if (closed_) return call->done->complete(error::closed);
        if (call->channels.empty()) return call->done->complete(error::invalid_argument);
        auto link = owner_of(key_slot(call->channels.front()));
        if (!link) {
            if (!wait_for_map) return call->done->complete(error::not_connected);
            // No map yet: subscribe once the first read ends, successful or not.
            connect_waiters_.push_back(connect_waiter{
                nullptr, std::make_shared<pending_completion<>>(
                             asio::bind_executor(strand_, [self = shared_from_this(), call](
                                                              error_code) { self->subscribe_on_strand(call, false); }),
                             strand_)});
            return request_refresh();
        }
        link->conn.async_subscribe(call->channels, *call->diag,
                                   asio::bind_executor(strand_, [self = shared_from_this(), call, link](error_code ec) {
                                       if (ec == error::server_error && self->follow_subscribe_refusal(call, *link))
                                           return;
                                       for (std::size_t i = 0; !ec && i < call->channels.size(); ++i) {
                                           if (self->still_wanted(call->channels[i], call->wants[i]))
                                               self->channel_homes_[call->channels[i]] = link->key;
                                       }
                                       call->done->complete(ec);
                                   }));
    }

    // A subscription refused with MOVED (the map was stale): the slot is the target's now; subscribes there, within
    // the call's deadline and redirect limit. False when the refusal is the answer.
    bool follow_subscribe_refusal(const std::shared_ptr<subscribe_call>& call, const master_link& link)
    {
        auto refusal = read_refusal(call->diag->server_message(), link.address.host);
        if (!refusal || refusal->what != cluster_refusal::kind::moved || closed_) return false;
        if (++call->redirects > max_redirects || clock::now() >= call->deadline) return false;
        map_.assign(refusal->slot, refusal->target);
        request_refresh();
        call->diag->clear();
        subscribe_on_strand(call, false);
        return true;
    }

    void unsubscribe_on_strand(std::vector<std::string> channels, std::shared_ptr<pending_completion<>> done)
    {
        if (closed_) return done->complete(error::closed);
        if (channels.empty()) return done->complete(error::invalid_argument);
        std::map<std::string, std::vector<std::string>> by_home;
        for (auto& channel : channels) {
            auto at = channel_homes_.find(channel);
            std::string home = at != channel_homes_.end() ? at->second : std::string();
            if (at != channel_homes_.end()) channel_homes_.erase(at);
            wanted_.erase(channel);
            if (home.empty()) {
                if (auto owner = owner_of(key_slot(channel))) home = owner->key;  // confirmed there if never subscribed
            }
            if (!home.empty()) by_home[home].push_back(std::move(channel));
        }
        struct gather {
            std::size_t left;
            error_code first;
            std::shared_ptr<pending_completion<>> done;
        };
        auto all = std::make_shared<gather>(gather{by_home.size(), {}, done});
        if (by_home.empty()) return done->complete({});
        for (auto& [home, group] : by_home) {
            auto link = find_link(home);
            auto one_done = asio::bind_executor(strand_, [all](error_code ec) {
                if (ec && !all->first) all->first = ec;
                if (--all->left == 0) all->done->complete(all->first);
            });
            if (!link) {
                asio::post(strand_, [one_done]() mutable { one_done(error_code{}); });  // that master is gone
                continue;
            }
            link->conn.async_unsubscribe(std::move(group), std::move(one_done));
        }
    }

    // Subscribes each held channel at its slot's master where it is not subscribed there (a new map moved its
    // slot, its master dropped it, or its last subscription failed), and unsubscribes it where it was. After every
    // map read, so a failure is tried again with the next; never twice at once for one channel.
    void rehome_channels()
    {
        if (closed_ || map_.empty()) return;
        std::map<std::string, std::vector<std::string>> to_subscribe;    // by new home
        std::map<std::string, std::vector<std::uint64_t>> wants;         // the channels' wants, by new home
        std::map<std::string, std::vector<std::string>> to_unsubscribe;  // by old home
        for (auto& [channel, home] : channel_homes_) {
            auto owner = owner_of(key_slot(channel));
            if (!owner || owner->key == home || rehoming_.count(channel) != 0) continue;
            if (!home.empty()) to_unsubscribe[home].push_back(channel);
            to_subscribe[owner->key].push_back(channel);
            wants[owner->key].push_back(wanted_[channel]);
            rehoming_.insert(channel);
            home.clear();  // nowhere until the new master confirms
        }
        for (auto& [home, group] : to_unsubscribe) {
            if (auto link = find_link(home)) link->conn.async_unsubscribe(std::move(group), [](error_code) {});
        }
        for (auto& entry : to_subscribe) {  // not a structured binding: clang 14 cannot capture one
            const std::string& home = entry.first;
            const std::vector<std::string>& group = entry.second;
            auto link = find_link(home);
            if (!link) {
                for (const auto& channel : group) rehoming_.erase(channel);
                continue;
            }
            auto diag = std::make_shared<diagnostics>();
            link->conn.async_subscribe(group, *diag,
                                       asio::bind_executor(strand_, [self = shared_from_this(), group,
                                                                     wants = wants[home], home, diag](error_code ec) {
                                           for (const auto& channel : group) self->rehoming_.erase(channel);
                                           if (ec) return self->request_refresh();  // the next map tries them again
                                           for (std::size_t i = 0; i < group.size(); ++i) {
                                               // Unsubscribed meanwhile (perhaps subscribed again since): the caller no
                                               // longer wants this one.
                                               if (!self->still_wanted(group[i], wants[i])) continue;
                                               auto at = self->channel_homes_.find(group[i]);
                                               if (at != self->channel_homes_.end()) at->second = home;
                                           }
                                       }));
        }
    }

    // --- close -----------------------------------------------------------------------------------------------

    void close_on_strand()
    {
        refresh_timer_.cancel();
        complete_connect_waiters(error::closed, "closed");
        for (auto& [id, lane] : lanes_) lane.drain([&](const op_ptr& op) { finish(op, error::closed); });
        // In flight: their connections, closed, complete them with error::closed.
        std::erase_if(lanes_, [](const auto& entry) { return entry.second.idle(); });
    }

    asio::any_io_executor io_;
    strand_type strand_;
    node_config config_;
    std::string name_;
    std::atomic<bool> closed_{false};

    slot_map map_;
    std::unordered_map<std::uint32_t, issue_lane<op_ptr>> lanes_;
    std::uint64_t next_seq_ = 0;

    bool refreshing_ = false;
    bool refresh_again_ = false;
    int refresh_failures_ = 0;
    asio::steady_timer refresh_timer_;
    std::vector<connect_waiter> connect_waiters_;

    mutable std::mutex links_mutex_;  // links_ and retired_usage_: read by get_usage and server
    std::map<std::string, std::shared_ptr<master_link>> links_;
    usage retired_usage_;

    std::shared_ptr<node_handlers> handlers_;
    std::map<std::string, std::string> channel_homes_;  // channel -> the link it is subscribed at ("" = nowhere)
    std::set<std::string> rehoming_;                    // channels rehome_channels is subscribing now
    std::map<std::string, std::uint64_t> wanted_;       // channel -> the number of the subscribe that wants it
    std::uint64_t last_want_ = 0;
};

cluster_node::cluster_node(const asio::any_io_executor& ex, const node_config& config)
    : state_(std::make_shared<cluster_state>(ex, config))
{
    shutdown_registry::enroll(ex, state_);
    state_->start();
}

cluster_node::~cluster_node()
{
    state_->close();
}

std::string cluster_node::name() const
{
    return state_->name();
}

void cluster_node::async_connect(diagnostics& diag, completion handler)
{
    state_->connect(&diag, std::move(handler));
}

void cluster_node::async_exec(const request& req, response& resp, std::string_view routing_key, completion handler)
{
    state_->exec(req, resp, routing_key, std::move(handler));
}

void cluster_node::async_subscribe(std::vector<std::string> channels, diagnostics& diag, completion handler)
{
    state_->subscribe(std::move(channels), &diag, std::move(handler));
}

void cluster_node::async_unsubscribe(std::vector<std::string> channels, completion handler)
{
    state_->unsubscribe(std::move(channels), std::move(handler));
}

void cluster_node::set_message_handler(message_handler handler)
{
    state_->set_message_handler(std::move(handler));
}

void cluster_node::set_tracking_handler(tracking_handler handler)
{
    state_->set_tracking_handler(std::move(handler));
}

server_identity cluster_node::server() const
{
    return state_->server();
}

usage cluster_node::get_usage() const
{
    return state_->get_usage();
}

void cluster_node::close()
{
    state_->close();
}

void cluster_node::resubscribe_channels(std::vector<std::string> channels, const std::string& from)
{
    state_->resubscribe(std::move(channels), from);
}

std::unique_ptr<node> make_cluster_node(const asio::any_io_executor& ex, const node_config& config)
{
    return std::make_unique<cluster_node>(ex, config);
}

}  // namespace redlock::detail
