#include "primitives/common/fair_attempts.hpp"
#include "primitives/common/fencing.hpp"

namespace redlock::detail {

namespace asio = boost::asio;
using clock = std::chrono::steady_clock;

namespace {

struct fair_waiter {
    std::uint64_t ticket = 0;  // 0 until the waiter joined the queue
};

// `waits`: a call that may take more than one attempt (not a try-lock), worth a place in the queue.
std::shared_ptr<const request> acquire_with(const lock_call& call, std::uint64_t ticket, bool waits)
{
    const bool one_node = call.client->nodes().size() == 1;
    return std::make_shared<const request>(call.kind->fair_acquire(call, ticket, one_node && waits));
}

// Over N nodes, a waiter without a ticket that was not granted takes one: 1 + the highest counter among a
// quorum's answers, so it follows every waiter already placed on a quorum (their quorum and ours share a node,
// which reported that waiter's ticket or more). Ties between waiters that chose at once order by token, the
// same way on every node. Nullopt with fewer answers than a quorum.
std::optional<std::uint64_t> next_ticket(const lock_kind& kind, const fan_out_state& result, std::size_t quorum)
{
    fence_maximum highest;
    std::size_t answers = 0;
    for (std::size_t i = 0; i < result.replies.size(); ++i) {
        if (!result.answered(i) || result.votes[i] == vote::error) continue;
        if (auto c = kind.read_answer(*result.results[i], result.replies[i]).ticket_counter) {
            highest.add(*c);
            ++answers;
        }
    }
    if (answers < quorum) return std::nullopt;
    return highest.next();
}

asio::awaitable<attempt_result> attempt(std::shared_ptr<const lock_call> call, std::shared_ptr<fair_waiter> waiter,
                                        bool waits, std::uint64_t n)
{
    auto& nodes = call->client->nodes();
    auto start = clock::now();
    // Without a ticket over N nodes, the refusals carry the counters it is chosen from: wait for a quorum of them.
    // Requests are named, not temporaries inside a co_await: g++ 12 may destroy those twice.
    const bool choosing = waiter->ticket == 0 && waits && nodes.size() > 1;
    auto first = acquire_with(*call, waiter->ticket, waits);
    auto result = co_await fan_out_acquire(call, first, choosing ? until::quorum_answered : until::decided);
    if (!result->cancelled && waiter->ticket == 0 && waits) {
        if (nodes.size() == 1) {  // the node gave us our ticket when it refused
            if (result->answered(0))
                if (auto t = call->kind->read_answer(*result->results[0], result->replies[0]).ticket; t && *t > 0)
                    waiter->ticket = *t;
        } else if (result->tally.decide() != quorum_tally::decision::reached) {
            if (auto ticket = next_ticket(*call->kind, *result, nodes.majority())) {
                call->release_attempt(2 * n - 1, *result);  // give back what it got: the queue decides now
                waiter->ticket = *ticket;
                // The acquire with a ticket joins each queue it reaches: placed on a quorum or not, the ticket
                // stands, and every later attempt heartbeats with it and joins the queues that miss it.
                start = clock::now();
                auto queued = acquire_with(*call, waiter->ticket, waits);
                result = co_await fan_out_acquire(call, queued);
            }
        }
    }
    // Release ids 2n - 1 and 2n: an attempt may clean up twice (without its ticket, then with it).
    auto out = co_await conclude_attempt(std::move(call), std::move(result), start, 2 * n);
    out.queued = waiter->ticket != 0;  // its next attempts heartbeat: they skip the client's gate (acquire_loop)
    co_return out;
}

}  // namespace

acquire_answer read_queue_answer(error_code ec, const response& resp)
{
    acquire_answer a;
    if (ec || resp.size() != 1 || resp[0].data_type != resp::type::array) return a;
    const auto& e = resp[0].elements;
    constexpr std::size_t grant_size = 3, refusal_size = 4;
    const auto number = [](const resp::value& v) -> std::optional<std::uint64_t> {
        if (auto n = v.as_integer(); n && *n >= 0) return static_cast<std::uint64_t>(*n);
        return parse_fence(v.text);
    };
    if (e.size() >= grant_size && e[0].as_integer() == 1) {
        a.fence = parse_fence(e[1].text);
        a.ticket_counter = number(e[2]);
        if (a.fence) a.verdict = vote::yes;
    } else if (e.size() >= refusal_size && e[0].as_integer() == 0) {
        a.verdict = vote::no;
        if (const auto wait = e[1].as_integer(); wait && *wait >= 0) a.wait = std::chrono::milliseconds(*wait);
        a.ticket_counter = number(e[2]);
        a.ticket = number(e[3]);
    }
    return a;
}

void fair_plan(const lock_call& call, acquire_plan& plan)
{
    plan.wake_token = call.lease().token;
    plan.max_pause = call.options.waiter_ttl / 3;
}

attempt_fn fair_attempts(std::shared_ptr<const lock_call> call, bool waits)
{
    return [call = std::move(call), waiter = std::make_shared<fair_waiter>(), waits](std::uint64_t n) {
        return attempt(call, waiter, waits, n);
    };
}

void leave_queue(const lock_call& call)
{
    call.client->nodes().send_to_all(std::make_shared<const request>(call.kind->protocol->release(
                                         call.lease(), call.lease().token + ":left", call.options.node_timeout)),
                                     call.lease().routing_key());
}

}  // namespace redlock::detail
