#include "quorum/node_set.hpp"

#include <redlock/detail/access.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>

namespace redlock::detail {

namespace asio = boost::asio;

fan_out_state::fan_out_state(const strand_type& strand, std::shared_ptr<const request> r, std::size_t nodes,
                             std::size_t quorum)
    : req(std::move(r)), replies(nodes), diags(nodes), results(nodes), votes(nodes), tally(nodes, quorum), wake(strand)
{}

std::size_t fan_out_state::unacknowledged() const noexcept
{
    return static_cast<std::size_t>(
        std::count_if(results.begin(), results.end(), [](const auto& r) { return r && *r == error::replica_acks; }));
}

void fan_out_state::report(diagnostics& diag, const std::vector<std::string>& names) const
{
    auto& out = access::nodes(diag);
    out.resize(names.size());
    for (std::size_t i = 0; i < names.size(); ++i) {
        auto& o = out[i];
        o.node = names[i];
        o.what = node_outcome::result::pending;
        o.ec = {};
        o.message.clear();
        if (!results[i]) continue;  // pending
        o.ec = *results[i];
        o.message = diags[i].message();
        for (const auto& reply : replies[i])
            if (reply.is_error()) o.message = reply.error_text();
        switch (votes[i]) {
            case vote::yes:
                o.what = node_outcome::result::granted;
                break;
            case vote::no:
                o.what = node_outcome::result::refused;
                break;
            case vote::error:
                o.what = node_outcome::result::failed;
                break;
        }
    }
}

node_set::node_set(const asio::any_io_executor& ex, std::vector<node_config> configs, const node_factory& factory)
    : io_executor_(ex),
      strand_(make_strand_of(ex)),
      configs_(std::move(configs)),
      errors_(std::make_shared<std::vector<std::atomic<std::uint64_t>>>(configs_.size()))
{
    for (const auto& config : configs_) {
        nodes_.push_back(factory ? factory(ex, config) : make_node(ex, config));
        names_.push_back(nodes_.back()->name());
        cross_slot_requests_ = cross_slot_requests_ && nodes_.back()->cross_slot_requests();
    }
}

node_set::~node_set() = default;

namespace {

// Starts `call` on node `n`, the i-th of `state`: its answer is recorded in the state on `strand`, once (`errors`, if
// any, counts its failures); a node that throws is a failed node.
void start_node(node& n, const std::shared_ptr<fan_out_state>& state, std::size_t i, const node_set::node_call& call,
                classify_fn classify, const strand_type& strand,
                const std::shared_ptr<std::vector<std::atomic<std::uint64_t>>>& errors)
{
    auto record = [state, i, classify, errors](error_code ec) {
        if (state->results[i]) return;  // a node that completes twice is ignored
        if (state->acks.on())
            ec = judge_acknowledgement(ec, state->replies[i], state->req->expected_replies(), state->acks, classify,
                                       state->diags[i]);
        if (ec && errors) (*errors)[i].fetch_add(1, std::memory_order_relaxed);
        state->results[i] = ec;
        state->votes[i] = classify(ec, state->replies[i]);
        state->tally.add(state->votes[i]);
        state->wake.cancel();
    };
    with_concrete_strand(strand, [&](const auto& executor) {
        auto done = asio::bind_executor(executor, record);
        try {
            call(n, *state, i, done);
        } catch (const std::exception& e) {
            // A node that throws is a failed node, not a failed operation: the others still count, and an
            // attempt still cleans up after itself.
            access::set_client_message(state->diags[i], std::string("the node threw: ") + e.what());
            asio::post(executor, [done, ec = make_error_code(error::protocol_error)]() mutable { done(ec); });
        }
    });
}

void exec_request(node& n, fan_out_state& s, std::size_t i, node::completion done)
{
    n.async_exec(*s.req, s.replies[i], s.routing_key, std::move(done));
}

// The request's own deadline, plus a margin, bounds the wait even for a node that ignores it.
std::chrono::steady_clock::time_point backstop(const request& req, std::chrono::steady_clock::time_point deadline)
{
    if (req.timeout().count() > 0)
        deadline = std::min(deadline, std::chrono::steady_clock::now() + req.timeout() + node_set::backstop_margin);
    return deadline;
}

}  // namespace

std::shared_ptr<fan_out_state> node_set::start(std::shared_ptr<const request> req, std::string routing_key,
                                               node_call call, classify_fn classify, std::size_t quorum,
                                               const std::vector<std::size_t>* only, replica_acks acks)
{
    auto state = std::make_shared<fan_out_state>(strand_, std::move(req), nodes_.size(), quorum);
    state->routing_key = std::move(routing_key);
    if (state->req) state->acks = acks;
    for (std::size_t i = 0; i < nodes_.size(); ++i) {
        if (only && std::find(only->begin(), only->end(), i) == only->end()) continue;
        start_node(*nodes_[i], state, i, call, classify, strand_, errors_);
    }
    return state;
}

asio::awaitable<std::shared_ptr<fan_out_state>> node_set::fan_out(node_call call, classify_fn classify,
                                                                  std::size_t quorum, until wait_for,
                                                                  std::chrono::steady_clock::time_point deadline)
{
    return outcome(start({}, {}, std::move(call), classify, quorum), wait_for, deadline);
}

asio::awaitable<std::shared_ptr<fan_out_state>> node_set::fan_out(std::shared_ptr<const request> req,
                                                                  std::string routing_key, classify_fn classify,
                                                                  std::size_t quorum, until wait_for,
                                                                  std::chrono::steady_clock::time_point deadline,
                                                                  replica_acks acks)
{
    deadline = backstop(*req, deadline);
    return outcome(start(std::move(req), std::move(routing_key), exec_request, classify, quorum, nullptr, acks),
                   wait_for, deadline);
}

asio::awaitable<std::shared_ptr<fan_out_state>> fan_out_to_one(node& n, const strand_type& strand,
                                                               std::shared_ptr<const request> req,
                                                               std::string routing_key, classify_fn classify)
{
    const auto deadline = backstop(*req, std::chrono::steady_clock::time_point::max());
    auto state = std::make_shared<fan_out_state>(strand, std::move(req), 1, 1);
    state->routing_key = std::move(routing_key);
    start_node(n, state, 0, exec_request, classify, strand, nullptr);
    return node_set::outcome(std::move(state), until::decided, deadline);
}

asio::awaitable<std::shared_ptr<fan_out_state>> node_set::outcome(std::shared_ptr<fan_out_state> state, until wait_for,
                                                                  std::chrono::steady_clock::time_point deadline)
{
    auto done = [&] {
        const auto& t = state->tally;
        const bool all = t.yes() + t.no() + t.errors() == t.nodes();
        switch (wait_for) {
            case until::all_answered:
                return all;
            case until::quorum_answered:
                if (t.decide() == quorum_tally::decision::reached) return true;
                return t.decide() != quorum_tally::decision::pending && (t.yes() + t.no() >= t.quorum() || all);
            case until::decided:
                break;
        }
        return t.decide() != quorum_tally::decision::pending;
    };
    while (!done()) {
        state->wake.expires_at(deadline);
        co_await state->wake.async_wait(asio::as_tuple(asio::use_awaitable));
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

vote answered(error_code ec, const response&)
{
    return ec ? vote::error : vote::yes;
}

void node_set::send_to_all(std::shared_ptr<const request> req, std::string routing_key)
{
    start(std::move(req), std::move(routing_key), exec_request, answered, nodes_.size());
}

void node_set::send_to(const std::vector<std::size_t>& which, std::shared_ptr<const request> req,
                       std::string routing_key)
{
    start(std::move(req), std::move(routing_key), exec_request, answered, nodes_.size(), &which);
}

void node_set::close()
{
    for (auto& n : nodes_) n->close();
}

}  // namespace redlock::detail
