#include "primitives/common/client_impl.hpp"

#include <redlock/client.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>

namespace redlock {
namespace detail {

namespace asio = boost::asio;
constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);

namespace {

class connection_node final : public node {
public:
    connection_node(asio::any_io_executor ex, node_config config) : conn_(std::move(ex), std::move(config))
    {
        conn_.async_connect([](error_code) {});  // start now; it keeps reconnecting on its own
    }
    const node_config& config() const noexcept override { return conn_.config(); }
    void exec(const request& req, response& resp, completion handler) override
    {
        conn_.async_exec(req, resp, std::move(handler));
    }
    void connect(diagnostics& diag, completion handler) override { conn_.async_connect(diag, std::move(handler)); }
    void close() override { conn_.close(); }
    void set_push_handler(std::function<void(const resp::value&)> handler) override
    {
        conn_.set_push_handler(std::move(handler));
    }

private:
    connection conn_;
};

}  // namespace

std::vector<node_outcome> fan_out_state::outcomes(const std::vector<std::unique_ptr<node>>& nodes) const
{
    std::vector<node_outcome> out(nodes.size());
    for (std::size_t i = 0; i < nodes.size(); ++i) {
        out[i].node = nodes[i]->config().to_string();
        if (!results[i]) continue;  // pending
        out[i].ec = *results[i];
        for (const auto& reply : replies[i]) {
            if (reply.is_error()) out[i].message = reply.error_text();
        }
        switch (votes[i]) {
            case vote::yes:
                out[i].what = node_outcome::result::granted;
                break;
            case vote::no:
                out[i].what = node_outcome::result::refused;
                break;
            case vote::error:
                out[i].what = node_outcome::result::failed;
                break;
        }
    }
    return out;
}

client_impl::client_impl(asio::any_io_executor ex, std::vector<node_config> configs)
    : strand_(asio::make_strand(ex)), configs_(std::move(configs))
{
    for (const auto& config : configs_) nodes_.push_back(std::make_unique<connection_node>(ex, config));
}

asio::awaitable<std::shared_ptr<fan_out_state>> client_impl::fan_out(request req, classify_fn classify, until wait_for,
                                                                     std::chrono::steady_clock::time_point deadline)
{
    auto state = std::make_shared<fan_out_state>(strand_, std::move(req), nodes_.size(), quorum());
    for (std::size_t i = 0; i < nodes_.size(); ++i) {
        nodes_[i]->exec(state->req, state->replies[i],
                        asio::bind_executor(strand_, [state, i, classify](error_code ec) {
                            state->results[i] = ec;
                            state->votes[i] = classify(ec, state->replies[i]);
                            state->tally.add(state->votes[i]);
                            state->wake.cancel();
                        }));
    }
    auto done = [&] {
        const auto& t = state->tally;
        return wait_for == until::all_answered ? t.yes() + t.no() + t.errors() == t.nodes()
                                               : t.decide() != quorum_tally::decision::pending;
    };
    while (!done()) {
        state->wake.expires_at(deadline);
        co_await state->wake.async_wait(use_tuple);
        if ((co_await asio::this_coro::cancellation_state).cancelled() != asio::cancellation_type::none) {
            state->cancelled = true;
            break;
        }
        if (!done() && std::chrono::steady_clock::now() >= deadline) {
            state->expired = true;
            break;
        }
    }
    co_return state;
}

void client_impl::send_to_all(request req)
{
    struct shared {
        request req;
        std::vector<response> replies;
    };
    auto s = std::make_shared<shared>(shared{std::move(req), std::vector<response>(nodes_.size())});
    for (std::size_t i = 0; i < nodes_.size(); ++i)
        nodes_[i]->exec(s->req, s->replies[i], asio::bind_executor(strand_, [s](error_code) {}));
}

asio::awaitable<std::tuple<error_code>> client_impl::connect_all(diagnostics* diag)
{
    if (diag) diag->clear();
    if (nodes_.empty()) co_return std::tuple{make_error_code(error::invalid_argument)};
    // Shared with the callbacks, which may outlive this coroutine.
    struct attempt {
        attempt(strand_type& strand, std::size_t n, std::size_t q) : diags(n), results(n), tally(n, q), wake(strand) {}
        std::vector<diagnostics> diags;
        std::vector<std::optional<error_code>> results;
        quorum_tally tally;
        asio::steady_timer wake;
    };
    auto a = std::make_shared<attempt>(strand_, nodes_.size(), quorum());
    for (std::size_t i = 0; i < nodes_.size(); ++i) {
        nodes_[i]->connect(a->diags[i], asio::bind_executor(strand_, [a, i](error_code ec) {
                               a->results[i] = ec;
                               a->tally.add(ec ? vote::error : vote::yes);
                               a->wake.cancel();
                           }));
    }
    // Decided like every quorum operation: a node still connecting does not hold the others up.
    while (a->tally.decide() == quorum_tally::decision::pending) {
        a->wake.expires_at(asio::steady_timer::time_point::max());
        co_await a->wake.async_wait(use_tuple);
        if ((co_await asio::this_coro::cancellation_state).cancelled() != asio::cancellation_type::none)
            co_return std::tuple{make_error_code(asio::error::operation_aborted)};
    }
    const bool reached = a->tally.decide() == quorum_tally::decision::reached;
    if (diag) {
        std::vector<node_outcome> outcomes(nodes_.size());
        for (std::size_t i = 0; i < nodes_.size(); ++i) {
            outcomes[i].node = configs_[i].to_string();
            if (!a->results[i]) continue;  // still connecting: pending
            outcomes[i].ec = *a->results[i];
            outcomes[i].message = a->diags[i].message();
            outcomes[i].what = *a->results[i] ? node_outcome::result::failed : node_outcome::result::granted;
        }
        diag->set_nodes(std::move(outcomes));
        if (!reached)
            diag->set_client_message(std::to_string(a->tally.errors()) + " of " + std::to_string(nodes_.size()) +
                                     " nodes could not be connected; a quorum needs " + std::to_string(quorum()));
    }
    co_return std::tuple{reached ? error_code{} : make_error_code(error::no_quorum)};
}

void client_impl::close()
{
    for (auto& n : nodes_) n->close();
}

std::shared_ptr<client_impl> make_client_impl(asio::any_io_executor ex, std::vector<node_config> configs)
{
    auto impl = std::make_shared<client_impl>(std::move(ex), std::move(configs));
    std::weak_ptr<client_impl> weak = impl;
    for (auto& n : impl->nodes_) {
        n->set_push_handler([weak](const resp::value& push) {
            // RESP3 pub/sub message: ["message", channel, payload]; confirmations and others are ignored.
            if (push.elements.size() < 3 || push.elements[0].text != "message") return;
            auto self = weak.lock();
            if (!self) return;
            asio::dispatch(self->strand_, [self, channel = push.elements[1].text, payload = push.elements[2].text] {
                self->on_message(channel, payload);
            });
        });
    }
    return impl;
}

void client_impl::watch(const std::vector<std::string>& channels, asio::steady_timer& timer)
{
    std::vector<std::string> fresh;
    for (const auto& channel : channels) {
        watchers_[channel].push_back(&timer);
        if (subscriptions_[channel]++ == 0) fresh.push_back(channel);
    }
    if (!fresh.empty()) {
        request req;
        req.push_range("SUBSCRIBE", fresh);
        send_to_all(std::move(req));
    }
}

void client_impl::unwatch(const std::vector<std::string>& channels, asio::steady_timer& timer)
{
    std::vector<std::string> stale;
    for (const auto& channel : channels) {
        if (auto queue = watchers_.find(channel); queue != watchers_.end()) {
            std::erase(queue->second, &timer);
            if (queue->second.empty()) watchers_.erase(queue);
        }
        auto count = subscriptions_.find(channel);
        if (count != subscriptions_.end() && --count->second == 0) {
            subscriptions_.erase(count);
            recent_releases_.erase(channel);
            stale.push_back(channel);
        }
    }
    if (!stale.empty()) {
        request req;
        req.push_range("UNSUBSCRIBE", stale);
        send_to_all(std::move(req));
    }
}

asio::awaitable<bool> client_impl::enter_gate(const std::string& id, asio::steady_timer& timer)
{
    auto [gate, free] = gates_.try_emplace(id);
    if (free) co_return true;
    gate->second.push_back(&timer);
    for (;;) {
        timer.expires_at(asio::steady_timer::time_point::max());
        co_await timer.async_wait(use_tuple);
        auto& waiting = gates_[id];
        const bool handed_over = std::find(waiting.begin(), waiting.end(), &timer) == waiting.end();
        if ((co_await asio::this_coro::cancellation_state).cancelled() != asio::cancellation_type::none) {
            if (handed_over)
                leave_gate(id);  // pass it on: the caller is gone
            else
                std::erase(waiting, &timer);
            co_return false;
        }
        if (handed_over) co_return true;
    }
}

void client_impl::leave_gate(const std::string& id)
{
    auto gate = gates_.find(id);
    if (gate == gates_.end()) return;
    if (gate->second.empty()) {
        gates_.erase(gate);
        return;
    }
    auto* next = gate->second.front();  // the gate stays taken: it passes to the longest waiting
    gate->second.pop_front();
    next->cancel();
}

void client_impl::on_message(const std::string& channel, const std::string& payload)
{
    auto queue = watchers_.find(channel);
    if (queue == watchers_.end()) return;
    auto& recent = recent_releases_[channel];
    if (std::find(recent.begin(), recent.end(), payload) != recent.end()) return;  // another node's copy
    if (recent.size() == 8) recent.erase(recent.begin());
    recent.push_back(payload);
    // The longest waiting watcher that is waiting now: one busy with an attempt will see the lock state anyway.
    for (auto* timer : queue->second)
        if (timer->cancel() > 0) break;
}

void start_client_connect(const std::shared_ptr<client_impl>& impl, diagnostics* diag,
                          asio::any_completion_handler<void(error_code)> handler)
{
    spawn_op<>(impl->strand(), impl->connect_all(diag), std::move(handler));
}

}  // namespace detail

client::client(executor_type ex, std::vector<node_config> nodes)
    : impl_(detail::make_client_impl(std::move(ex), std::move(nodes)))
{}

// Connections close when the last user of the nodes is gone: leases outliving the client can still release.
client::~client() = default;

client::client(client&&) noexcept = default;

client& client::operator=(client&&) noexcept = default;

client::executor_type client::get_executor() const noexcept
{
    return impl_->strand();
}
std::size_t client::size() const noexcept
{
    return impl_->size();
}
std::size_t client::quorum() const noexcept
{
    return impl_->quorum();
}
const std::vector<node_config>& client::nodes() const noexcept
{
    return impl_->configs();
}
void client::close()
{
    impl_->close();
}

}  // namespace redlock
