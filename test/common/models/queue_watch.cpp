#include <redlock/key_layout.hpp>
#include <redlock/request.hpp>
#include <redlock/response.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>
#include <cmath>
#include <common/models/queue_watch.hpp>
#include <exception>
#include <utility>

namespace redlock::test {

namespace asio = boost::asio;
using pairs = std::vector<std::pair<std::string, std::string>>;

namespace {

// One consistent look at a node: its time (ms), then the queue and the heartbeats, each as member, score, ...
constexpr const char* look = R"lua(
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
return {now, redis.call('ZRANGE', KEYS[1], 0, -1, 'WITHSCORES'), redis.call('ZRANGE', KEYS[2], 0, -1, 'WITHSCORES')}
)lua";

std::int64_t whole(const std::string& score)
{
    return std::llround(std::stod(score));
}

bool read_pairs(const resp::value& v, pairs& out)
{
    out.clear();
    if (v.elements.size() % 2 != 0) return false;
    for (std::size_t i = 0; i < v.elements.size(); i += 2) out.emplace_back(v.elements[i].text, v.elements[i + 1].text);
    return true;
}

}  // namespace

fair_queue_watch::fair_queue_watch(const cluster& nodes, std::string name, std::chrono::milliseconds waiter_ttl,
                                   std::vector<std::string> paths, std::chrono::milliseconds period)
    : urls_(nodes.urls()),
      paths_(std::move(paths)),
      name_(std::move(name)),
      waiter_ttl_(waiter_ttl),
      period_(period),
      nodes_(nodes.size())
{
    report_.slowest_look.resize(nodes.size());
    report_.slowest_path.resize(paths_.size());
    thread_ = std::thread([this] { run(); });
}

fair_queue_watch::~fair_queue_watch()
{
    stop();
}

void fair_queue_watch::served(const std::string& token)
{
    std::lock_guard lock(mutex_);
    served_.insert(token);
}

std::size_t fair_queue_watch::joined_everywhere() const
{
    std::lock_guard lock(mutex_);
    std::size_t n = 0;
    for (const auto& [token, e] : nodes_.front()) {
        bool everywhere = true;
        for (const auto& node : nodes_) everywhere = everywhere && node.count(token);
        if (everywhere) ++n;
    }
    return n;
}

fair_queue_watch::report fair_queue_watch::stop()
{
    stopping_ = true;
    if (thread_.joinable()) thread_.join();
    std::lock_guard lock(mutex_);
    return report_;
}

void fair_queue_watch::run()
{
    asio::io_context ctx;
    std::vector<connection> conns, path_conns;
    for (const auto& url : urls_) conns.emplace_back(ctx.get_executor(), parse_url(url));
    for (const auto& url : paths_) path_conns.emplace_back(ctx.get_executor(), parse_url(url));
    std::size_t running = 1 + path_conns.size();
    const auto ended = [&](std::exception_ptr e) {
        --running;
        if (!e) return;
        try {
            std::rethrow_exception(e);
        } catch (const std::exception& ex) {
            std::lock_guard lock(mutex_);
            report_.errors.push_back(std::string("the watch stopped: ") + ex.what());
        }
    };
    asio::co_spawn(ctx, poll(conns), ended);
    for (std::size_t i = 0; i < path_conns.size(); ++i) asio::co_spawn(ctx, time_path(path_conns[i], i), ended);
    while (running > 0) ctx.run_one_for(std::chrono::milliseconds(100));
    for (auto& c : conns) c.close();
    for (auto& c : path_conns) c.close();
    ctx.run_for(std::chrono::seconds(2));
}

asio::awaitable<void> fair_queue_watch::poll(std::vector<connection>& conns)
{
    for (std::size_t i = 0; i < conns.size(); ++i)
        if (auto [ec] = co_await conns[i].async_connect(asio::as_tuple(asio::use_awaitable)); ec) {
            std::lock_guard lock(mutex_);
            report_.errors.push_back("node " + std::to_string(i) + ": connect: " + ec.message());
        }
    request req;
    req.push("EVAL", look, 2, aux_name(name_, "queue"), aux_name(name_, "alive"));
    response resp;
    pairs queue, alive;
    asio::steady_timer timer(co_await asio::this_coro::executor);
    while (!stopping_) {
        for (std::size_t i = 0; i < conns.size(); ++i) {
            const auto sent = std::chrono::steady_clock::now();
            auto [ec] = co_await conns[i].async_exec(req, resp, asio::as_tuple(asio::use_awaitable));
            const auto took = std::chrono::ceil<std::chrono::milliseconds>(std::chrono::steady_clock::now() - sent);
            {
                std::lock_guard lock(mutex_);
                report_.slowest_look[i] = std::max(report_.slowest_look[i], took);
            }
            const bool shaped = !ec && resp.size() == 1 && resp[0].elements.size() == 3 &&
                                resp[0].elements[0].as_integer() && read_pairs(resp[0].elements[1], queue) &&
                                read_pairs(resp[0].elements[2], alive);
            if (!shaped) {
                std::lock_guard lock(mutex_);
                report_.errors.push_back("node " + std::to_string(i) + ": " +
                                         (ec ? ec.message() : std::string("a reply of another shape")));
                continue;
            }
            sample(i, *resp[0].elements[0].as_integer(), queue, alive);
        }
        timer.expires_after(period_);
        co_await timer.async_wait(asio::as_tuple(asio::use_awaitable));
    }
}

asio::awaitable<void> fair_queue_watch::time_path(connection& conn, std::size_t i)
{
    co_await conn.async_connect(asio::as_tuple(asio::use_awaitable));
    request ping;
    ping.push("PING");
    asio::steady_timer timer(co_await asio::this_coro::executor);
    while (!stopping_) {
        const auto sent = std::chrono::steady_clock::now();
        auto [ec] = co_await conn.async_exec(ping, asio::as_tuple(asio::use_awaitable));
        const auto took = std::chrono::ceil<std::chrono::milliseconds>(std::chrono::steady_clock::now() - sent);
        {
            std::lock_guard lock(mutex_);
            report_.slowest_path[i] = std::max(report_.slowest_path[i], took);
            if (ec) report_.errors.push_back("path " + std::to_string(i) + ": PING: " + ec.message());
        }
        timer.expires_after(period_);
        co_await timer.async_wait(asio::as_tuple(asio::use_awaitable));
    }
}

void fair_queue_watch::sample(std::size_t node, std::int64_t now, const pairs& queue, const pairs& alive)
{
    std::lock_guard lock(mutex_);
    ++report_.samples;
    std::map<std::string, std::int64_t> ends;
    for (const auto& [token, score] : alive) ends[token] = whole(score);
    auto& known = nodes_[node];
    const auto where = "node " + std::to_string(node) + ": waiter ";
    std::set<std::string> present;
    for (const auto& [token, ticket] : queue) {
        report_.ticket.try_emplace(token, static_cast<std::uint64_t>(whole(ticket)));
        if (served_.count(token)) continue;
        present.insert(token);
        auto [it, fresh] = known.try_emplace(token);
        auto& e = it->second;
        e.gone = false;
        const auto end = ends.find(token);
        if (end == ends.end()) {
            if (!e.expired) event(where + token + " is queued without a heartbeat entry");
            e.expired = true;
            continue;
        }
        const auto heartbeat = end->second - waiter_ttl_.count();
        if (!fresh && heartbeat != e.heartbeat) {
            const auto gap = std::chrono::milliseconds(heartbeat - e.heartbeat);
            if (gap > report_.longest_gap) {
                report_.longest_gap = gap;
                report_.longest_gap_of = where + token;
            }
            e.expired = false;
        }
        e.heartbeat = heartbeat;
        if (end->second <= now && !e.expired) {
            e.expired = true;
            event(where + token + "'s heartbeat ended: its last was " + std::to_string(now - heartbeat) + " ms ago");
        }
    }
    for (auto& [token, e] : known)
        if (!e.gone && !present.count(token) && !served_.count(token)) {
            e.gone = true;
            event(where + token + " left the queue, not served: its last heartbeat was " +
                  std::to_string(now - e.heartbeat) + " ms ago");
        }
}

void fair_queue_watch::event(std::string what)
{
    ++report_.evictions;
    const auto at = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - started_);
    if (report_.events.size() < 10) report_.events.push_back("+" + std::to_string(at.count()) + " ms: " + what);
}

}  // namespace redlock::test
