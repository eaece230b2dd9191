#include "common/embedded_script.hpp"
#include "common/fakes/fake_node.hpp"
#include "lua/common.hpp"
#include "lua/mutex.hpp"

#include <boost/asio/append.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

#include <deque>
#include <map>
#include <optional>
#include <stdexcept>

namespace redlock::test {

namespace asio = boost::asio;
using redlock::detail::embedded_script;
namespace lua = redlock::detail::lua;

const char* to_string(script_kind k) noexcept
{
    switch (k) {
        case script_kind::acquire:
            return "acquire";
        case script_kind::acquire_reading_fence:
            return "acquire_reading_fence";
        case script_kind::acquire_incrementing_fence:
            return "acquire_incrementing_fence";
        case script_kind::commit_fence:
            return "commit_fence";
        case script_kind::extend:
            return "extend";
        case script_kind::release:
            return "release";
        case script_kind::set_acquire:
            return "set_acquire";
        case script_kind::other:
            return "other";
    }
    return "?";
}

std::vector<exec_record> fake_node_control::received(script_kind kind) const
{
    std::vector<exec_record> out;
    for (auto& r : received())
        if (r.kind == kind) out.push_back(r);
    return out;
}

std::vector<node_config> fake_cluster::configs() const
{
    std::vector<node_config> out(nodes.size());
    for (std::size_t i = 0; i < out.size(); ++i) {
        out[i].host = "fake";
        out[i].port = static_cast<std::uint16_t>(7000 + i);
    }
    return out;
}

namespace {

script_kind kind_of(const std::string& sha)
{
    if (sha == embedded_script<lua::common_acquire>().sha1()) return script_kind::acquire;
    if (sha == embedded_script<lua::mutex_acquire_reading_fence>().sha1()) return script_kind::acquire_reading_fence;
    if (sha == embedded_script<lua::mutex_acquire_incrementing_fence>().sha1())
        return script_kind::acquire_incrementing_fence;
    if (sha == embedded_script<lua::common_commit_fence>().sha1()) return script_kind::commit_fence;
    if (sha == embedded_script<lua::common_extend>().sha1()) return script_kind::extend;
    if (sha == embedded_script<lua::mutex_release>().sha1()) return script_kind::release;
    return script_kind::other;
}

// The words of each command of a request (bulk strings only, as request::push writes).
std::vector<std::vector<std::string>> commands_of(std::string_view payload)
{
    std::vector<std::vector<std::string>> commands;
    auto line = [&payload]() {
        const auto end = payload.find("\r\n");
        auto text = payload.substr(0, end);
        payload.remove_prefix(end == std::string_view::npos ? payload.size() : end + 2);
        return text;
    };
    while (!payload.empty()) {
        const auto header = line();
        if (header.empty() || header[0] != '*') break;
        auto& words = commands.emplace_back();
        const auto count = std::stoul(std::string(header.substr(1)));
        for (std::size_t i = 0; i < count; ++i) {
            const auto length = std::stoul(std::string(line().substr(1)));
            words.emplace_back(payload.substr(0, length));
            payload.remove_prefix(length + 2);
        }
    }
    return commands;
}

// The first command of a request without scripts.
std::vector<std::string> first_command(std::string_view payload)
{
    auto commands = commands_of(payload);
    return commands.empty() ? std::vector<std::string>{} : std::move(commands.front());
}

// A request that ends with WAIT: its numbers go into the record.
void read_wait(std::string_view payload, exec_record& r)
{
    r.payload = std::string(payload);
    const auto commands = commands_of(payload);
    if (commands.size() < 2 || commands.back().size() != 3 || commands.back()[0] != "WAIT") return;
    r.wait_replicas = std::stoll(commands.back()[1]);
    r.wait_timeout = std::stoll(commands.back()[2]);
}

// Completes `h` on its associated executor (the node's executor otherwise), never inline.
void complete(const asio::any_io_executor& ex, node::completion h, error_code ec)
{
    asio::post(ex, asio::append(std::move(h), ec));
}

struct held_exec {
    response* resp;
    node::completion done;
    bool batched = false;               // a watchdog batch: the delivered reply is its element
    std::optional<resp::value> wait{};  // the reply of the request's WAIT, after its own
};

class state final : public fake_node_control {
public:
    explicit state(std::size_t i) : index_(i)
    {
        on(script_kind::acquire, action::granted());
        on(script_kind::acquire_reading_fence, action::reply(array({integer(1), bulk("0")})));
        on(script_kind::acquire_incrementing_fence, action::reply(array({integer(1), bulk("1")})));
        on(script_kind::commit_fence, action::granted());
        on(script_kind::extend, action::granted());
        on(script_kind::release, action::released());
        on(script_kind::set_acquire, action::set_granted());
        on(script_kind::other, action::reply(scalar(resp::type::simple_string, "OK")));
    }

    // fake_node_control
    void on(script_kind kind, action a) override { rules_[kind] = {{}, std::move(a)}; }
    void on_sequence(script_kind kind, std::vector<action> steps, action then) override
    {
        rules_[kind] = {std::move(steps), std::move(then)};
    }
    void set_policy(exec_policy p) override { policy_ = std::move(p); }
    void on_connect(action a) override { connect_ = std::move(a); }
    std::vector<exec_record> received() const override { return received_; }
    std::size_t connects() const override { return connects_; }
    std::vector<std::string> subscribed() const override { return subscribed_; }
    std::size_t held() const override { return held_.size(); }
    std::size_t held_connects() const override { return held_connects_.size(); }
    bool deliver_held(resp::value value) override
    {
        if (held_.empty()) return false;
        auto h = std::move(held_.front());
        held_.pop_front();
        h.resp->clear();
        h.resp->push_back(h.batched ? array({std::move(value)}) : std::move(value));
        if (h.wait) h.resp->push_back(std::move(*h.wait));
        complete(ex_, std::move(h.done), {});
        return true;
    }
    bool fail_held(error_code ec) override
    {
        if (held_.empty()) return false;
        auto h = std::move(held_.front());
        held_.pop_front();
        complete(ex_, std::move(h.done), ec);
        return true;
    }
    std::size_t complete_connects(error_code ec) override
    {
        auto all = std::move(held_connects_);
        held_connects_.clear();
        for (auto& h : all) complete(ex_, std::move(h), ec);
        return all.size();
    }
    bool closed() const override { return closed_; }
    bool destroyed() const override { return destroyed_; }
    void publish(std::string_view channel, std::string_view payload) override
    {
        if (on_message_) on_message_(channel, payload);
    }

    // What the node does.
    std::string name() const { return "redis://fake:" + std::to_string(7000 + index_); }

    void connect(const asio::any_io_executor& ex, node::completion h)
    {
        ex_ = ex;
        ++connects_;
        if (closed_) return complete(ex, std::move(h), make_error_code(error::closed));
        switch (connect_.kind) {
            case action::what::hold:
                held_connects_.push_back(std::move(h));
                return;
            case action::what::fail:
                return complete(ex, std::move(h), connect_.ec);
            case action::what::raise:
                throw std::runtime_error("fake node: async_connect throws");
            default:
                return complete(ex, std::move(h), {});
        }
    }

    // The watchdog's batched extension: each lease in it is recorded, and decided, as an extension of its own;
    // the node answers the array of their replies (or, if one lease's outcome is not a reply, does that).
    void exec_batch(const asio::any_io_executor& ex, const request& req, response& resp, std::string_view routing_key,
                    node::completion h)
    {
        const auto p =
            req.script_params(req.script_calls().front());  // numkeys, keys..., then count, token, ttl per lease
        const std::size_t numkeys = std::stoul(p.at(0));
        std::size_t key = 1;
        resp::value replies = array({});
        std::optional<action> other;  // the first lease whose outcome is not a reply (delays: the longest)
        std::chrono::milliseconds delay{0};
        exec_record waited;
        read_wait(req.payload(), waited);
        for (std::size_t a = 1 + numkeys; a + 2 < p.size(); a += 3) {
            exec_record r = waited;
            r.kind = script_kind::extend;
            r.timeout = req.timeout();
            r.routing_key = std::string(routing_key);
            r.batched = true;
            r.request = requests_;
            for (std::size_t k = 0; k < std::stoul(p[a]); ++k) r.keys.push_back(p.at(key++));
            r.args = {p[a + 1], p[a + 2]};
            r.index = counts_[r.kind]++;
            received_.push_back(r);
            auto one = decide(r);
            if (one.kind == action::what::delay) delay = std::max(delay, one.after);
            if ((one.kind == action::what::reply && !one.ec) || one.kind == action::what::delay)
                replies.elements.push_back(std::move(one.value));
            else if (!other)
                other = std::move(one);
        }
        ++requests_;
        if (closed_) return complete(ex, std::move(h), make_error_code(error::closed));
        if (!other)
            other = delay.count() > 0 ? action::delayed(delay, std::move(replies)) : action::reply(std::move(replies));
        const bool batched_hold = other->kind == action::what::hold;
        act(ex, req, resp, *other, script_kind::extend, wait_reply(waited), std::move(h));
        if (batched_hold) held_.back().batched = true;
    }

    void exec(const asio::any_io_executor& ex, const request& req, response& resp, std::string_view routing_key,
              node::completion h)
    {
        ex_ = ex;
        if (!req.script_calls().empty() &&
            req.script_calls().front().code.sha1() == embedded_script<lua::common_extend_many>().sha1())
            return exec_batch(ex, req, resp, routing_key, std::move(h));
        exec_record r;
        r.timeout = req.timeout();
        r.routing_key = std::string(routing_key);
        read_wait(req.payload(), r);
        if (!req.script_calls().empty()) {
            const auto& call = req.script_calls().front();
            r.kind = kind_of(call.code.sha1());
            const auto p = req.script_params(call);  // numkeys, keys..., args...
            const std::size_t numkeys = p.empty() ? 0 : std::stoul(p[0]);
            for (std::size_t i = 1; i < p.size(); ++i) (i <= numkeys ? r.keys : r.args).push_back(p[i]);
        } else if (auto words = first_command(req.payload()); words.size() == 7 && words[0] == "SET") {
            r.kind = script_kind::set_acquire;  // SET key token NX PX ttl GET
            r.keys = {words[1]};
            r.args = {words[2], words[5]};
        }
        r.index = counts_[r.kind]++;
        r.request = requests_++;
        received_.push_back(r);
        if (closed_) return complete(ex, std::move(h), make_error_code(error::closed));

        act(ex, req, resp, decide(r), r.kind, wait_reply(r), std::move(h));
    }

    // The reply of a request's WAIT, if it ends with one.
    std::optional<resp::value> wait_reply(const exec_record& r) const
    {
        if (!r.wait_replicas) return std::nullopt;
        if (wait_reply_) return *wait_reply_;
        const auto by_kind = acknowledging_by_kind_.find(r.kind);
        const auto& acknowledging = by_kind != acknowledging_by_kind_.end() ? by_kind->second : acknowledging_;
        return integer(acknowledging ? *acknowledging : *r.wait_replicas);
    }

    // `wait`: the reply of the request's WAIT, which follows the action's own replies.
    void act(const asio::any_io_executor& ex, const request& req, response& resp, const action& a, script_kind kind,
             std::optional<resp::value> wait, node::completion h)
    {
        const auto own_replies = req.expected_replies() - (wait ? 1 : 0);
        switch (a.kind) {
            case action::what::reply: {
                fill(resp, own_replies, a.value);
                const bool wait_failed = wait && wait->is_error();
                if (wait) resp.push_back(std::move(*wait));
                return complete(ex, std::move(h), wait_failed ? make_error_code(error::server_error) : a.ec);
            }
            case action::what::fail:
                return complete(ex, std::move(h), a.ec);
            case action::what::hold:
                held_.push_back({&resp, std::move(h), false, std::move(wait)});
                return;
            case action::what::silent:
            case action::what::delay: {
                auto timer = std::make_shared<asio::steady_timer>(ex);
                const bool silent = a.kind == action::what::silent;
                timer->expires_after(silent ? req.timeout() : a.after);
                auto on_time = [timer, resp_p = &resp, value = a.value, silent, ex, replies = own_replies,
                                wait = std::move(wait), h = std::move(h)](error_code) mutable {
                    if (silent) return complete(ex, std::move(h), make_error_code(error::timeout));
                    fill(*resp_p, replies, std::move(value));
                    if (wait) resp_p->push_back(std::move(*wait));
                    complete(ex, std::move(h), {});
                };
                timer->async_wait(std::move(on_time));
                return;
            }
            case action::what::raise:
                throw std::runtime_error(std::string("fake node: async_exec throws on ") + to_string(kind));
        }
    }

    void subscribe(const asio::any_io_executor& ex, std::vector<std::string> channels, node::completion h)
    {
        if (!closed_ && hold_subscriptions_) {
            ex_ = ex;
            held_subscriptions_.push_back(std::move(h));
            return;
        }
        error_code ec = closed_ ? make_error_code(error::closed) : error_code{};
        if (!ec && on_subscribe_) ec = on_subscribe_(channels);
        if (!ec)
            for (auto& c : channels) subscribed_.push_back(std::move(c));
        complete(ex, std::move(h), ec);
    }
    void on_subscribe(std::function<error_code(const std::vector<std::string>&)> f) override
    {
        on_subscribe_ = std::move(f);
    }
    void hold_subscriptions() override { hold_subscriptions_ = true; }
    void set_handler(node::message_handler h) { on_message_ = std::move(h); }

    // Operations in flight fail with error::closed (also when the node is destroyed).
    void close(bool destroying)
    {
        closed_ = true;
        if (destroying) {
            destroyed_ = true;
            on_message_ = nullptr;
        }
        while (fail_held(make_error_code(error::closed))) {
        }
        complete_connects(make_error_code(error::closed));
        auto subscriptions = std::move(held_subscriptions_);
        held_subscriptions_.clear();
        for (auto& h : subscriptions) complete(ex_, std::move(h), make_error_code(error::closed));
    }

    server_identity server() const { return server_; }
    void set_server(server_identity s) override { server_ = s; }
    void set_acknowledging_replicas(std::optional<std::int64_t> replicas) override
    {
        acknowledging_ = replicas;
        acknowledging_by_kind_.clear();
    }
    void set_acknowledging_replicas(script_kind kind, std::optional<std::int64_t> replicas) override
    {
        acknowledging_by_kind_[kind] = replicas;
    }
    void set_wait_reply(std::optional<resp::value> reply) override { wait_reply_ = std::move(reply); }

private:
    // One reply per expected reply: a pipelined request's action holds them as one array.
    static void fill(response& resp, std::size_t expected, resp::value value)
    {
        resp.clear();
        if (expected > 1 && value.data_type == resp::type::array && value.elements.size() == expected) {
            for (auto& v : value.elements) resp.push_back(std::move(v));
        } else {
            resp.push_back(std::move(value));
        }
    }

    action decide(const exec_record& r)
    {
        if (policy_) return policy_(r);
        auto& rule = rules_[r.kind];
        return r.index < rule.steps.size() ? rule.steps[r.index] : rule.then;
    }

    struct rule {
        std::vector<action> steps;
        action then;
    };
    std::size_t index_;
    asio::any_io_executor ex_;
    std::map<script_kind, rule> rules_;
    std::map<script_kind, std::size_t> counts_;
    exec_policy policy_;
    action connect_ = action::reply({});
    std::vector<exec_record> received_;
    std::size_t connects_ = 0;
    std::vector<std::string> subscribed_;
    std::deque<held_exec> held_;
    std::vector<node::completion> held_connects_;
    node::message_handler on_message_;
    std::function<error_code(const std::vector<std::string>&)> on_subscribe_;
    bool hold_subscriptions_ = false;
    std::vector<node::completion> held_subscriptions_;
    bool closed_ = false;
    bool destroyed_ = false;
    server_identity server_{server_kind::redis, 60200};
    std::optional<std::int64_t> acknowledging_;
    std::map<script_kind, std::optional<std::int64_t>> acknowledging_by_kind_;
    std::optional<resp::value> wait_reply_;
    std::size_t requests_ = 0;
};

class fake_node final : public node {
public:
    fake_node(asio::any_io_executor ex, std::shared_ptr<state> s) : ex_(std::move(ex)), s_(std::move(s)) {}
    ~fake_node() override { s_->close(true); }

    std::string name() const override { return s_->name(); }
    void async_connect(diagnostics&, completion handler) override { s_->connect(ex_, std::move(handler)); }
    void async_exec(const request& req, response& resp, std::string_view routing_key, completion handler) override
    {
        s_->exec(ex_, req, resp, routing_key, std::move(handler));
    }
    void async_subscribe(std::vector<std::string> channels, diagnostics&, completion handler) override
    {
        s_->subscribe(ex_, std::move(channels), std::move(handler));
    }
    void async_unsubscribe(std::vector<std::string>, completion handler) override
    {
        complete(ex_, std::move(handler), {});
    }
    void set_message_handler(message_handler handler) override { s_->set_handler(std::move(handler)); }
    server_identity server() const override { return s_->server(); }
    void close() override { s_->close(false); }

private:
    asio::any_io_executor ex_;
    std::shared_ptr<state> s_;
};

}  // namespace

fake_cluster fake_nodes(std::size_t n)
{
    fake_cluster out;
    std::vector<std::shared_ptr<state>> states;
    for (std::size_t i = 0; i < n; ++i) states.push_back(std::make_shared<state>(i));
    out.nodes.assign(states.begin(), states.end());
    auto next = std::make_shared<std::size_t>(0);
    out.factory = [states, next](const asio::any_io_executor& ex, const node_config&) -> std::unique_ptr<node> {
        if (*next >= states.size()) throw std::logic_error("fake_nodes: more nodes asked for than made");
        return std::make_unique<fake_node>(ex, states[(*next)++]);
    };
    return out;
}

}  // namespace redlock::test
