// The endpoints: routing, the per-client rate limit, and each endpoint's answer.
#if defined(__GNUC__) && !defined(__clang__)
// g++ 12 pairs the allocation of an Asio coroutine frame with the frame's own operator delete (which frees it
// correctly) and reports -Wmismatched-new-delete, for some frames only, as its inlining decides.
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif

#include "log.hpp"
#include "order_id.hpp"
#include "route.hpp"
#include "service.hpp"

#include <redlock/rate_limiter.hpp>
#include <redlock/stats.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/system/system_error.hpp>

#include <optional>

namespace http_inventory {

namespace asio = boost::asio;
namespace http = boost::beast::http;
using namespace std::chrono_literals;
constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);

namespace {

// A readiness probe must answer within the prober's timeout (Kubernetes: 1 s by default).
constexpr auto readiness_budget = 800ms;

response unavailable(std::string_view code, std::string_view message)
{
    auto res = error_reply(http::status::service_unavailable, code, message);
    res.set(http::field::retry_after, "1");
    return res;
}

response metrics_reply(service& s)
{
    std::string text = s.stats.to_prometheus(s.draining);
    text += redlock::to_prometheus(s.locks.stats(), "redlock");
    return reply(http::status::ok, std::move(text), "text/plain; version=0.0.4; charset=utf-8");
}

// Ready when not draining and a quorum of lock nodes and the store answer, within the budget.
asio::awaitable<response> readiness_reply(service& s)
{
    if (s.draining) co_return error_reply(http::status::service_unavailable, "draining", "shutting down");
    const std::string why_not = co_await s.probe.check(readiness_budget);
    if (why_not.empty()) co_return reply(http::status::ok, "{\"status\":\"ready\"}");
    co_return unavailable(why_not.starts_with("store") ? "store" : "lock_nodes", why_not);
}

std::string item_json(std::string_view id, const item_state& st)
{
    return "{\"item\":" + json_string(id) + ",\"stock\":" + std::to_string(st.stock) +
           ",\"reserved\":" + std::to_string(st.reserved) + "}";
}

const char* label(const reservation& r)
{
    switch (r.status) {
        case reserve_status::reserved:
            return "reserved";
        case reserve_status::replayed:
            return "replayed";
        case reserve_status::sold_out:
            return "sold_out";
        case reserve_status::unknown_item:
            return "unknown_item";
        case reserve_status::failed:
            break;
    }
    switch (r.failure) {
        case write_status::busy:
            return "busy";
        case write_status::fenced_out:
            return "fenced_out";
        case write_status::outcome_unknown:
            return "outcome_unknown";
        case write_status::deadline_passed:
            return "deadline_passed";
        case write_status::done:
        case write_status::unavailable:
            break;
    }
    return "unavailable";
}

response write_failure(write_status why)
{
    switch (why) {
        case write_status::busy:
            return unavailable("busy", "the item stayed locked for the whole request timeout; retry");
        case write_status::fenced_out:
            return unavailable("fenced_out", "this instance's lock was superseded before it wrote; nothing changed");
        case write_status::outcome_unknown:
            return unavailable("outcome_unknown",
                               "the write was sent but not confirmed; retry with the same Idempotency-Key");
        case write_status::deadline_passed:
            return unavailable("deadline", "the request timeout ran out; nothing changed");
        case write_status::done:
        case write_status::unavailable:
            break;
    }
    return unavailable("unavailable", "the lock nodes or the store did not answer; nothing changed");
}

asio::awaitable<response> reserve(service& s, std::string item_id, const request& req, deadline d)
{
    std::string order_id(req["Idempotency-Key"]);
    if (order_id.empty())
        order_id = new_order_id();
    else if (!valid_order_id(order_id))
        co_return error_reply(http::status::bad_request, "bad_idempotency_key",
                              "Idempotency-Key: 1 to 128 of [A-Za-z0-9_.:-]");

    const reservation r = co_await s.items.reserve(item_id, order_id, d);
    s.stats.count_reservation(label(r));
    const std::string order = "{\"order\":" + json_string(r.order_id) + ",\"item\":" + json_string(item_id) +
                              ",\"fencing_token\":" + std::to_string(r.fencing_token);
    switch (r.status) {
        case reserve_status::reserved:
            co_return reply(http::status::created, order + ",\"stock_left\":" + std::to_string(r.stock_left) + "}");
        case reserve_status::replayed:
            co_return reply(http::status::ok, order + ",\"replayed\":true}");
        case reserve_status::sold_out:
            co_return error_reply(http::status::conflict, "sold_out", "no stock left");
        case reserve_status::unknown_item:
            co_return error_reply(http::status::not_found, "unknown_item", "no stock was set for this item");
        case reserve_status::failed:
            break;
    }
    if (r.failure != write_status::busy && r.failure != write_status::deadline_passed)
        log(redlock::log_level::warning,
            "reserve " + item_id + " order " + r.order_id + ": " + label(r) + ": " + r.detail);
    co_return write_failure(r.failure);
}

asio::awaitable<response> put_item(service& s, std::string item_id, const request& req, deadline d)
{
    const auto stock = parse_stock_body(req.body());
    if (!stock) co_return error_reply(http::status::bad_request, "bad_body", R"(expected {"stock": N}, 0 <= N)");
    const write_status st = co_await s.items.set_stock(item_id, *stock, d);
    if (st != write_status::done) co_return write_failure(st);
    co_return reply(http::status::ok, item_json(item_id, {.exists = true, .stock = *stock}));
}

asio::awaitable<response> get_item(service& s, std::string item_id, deadline d)
{
    item_state st;
    try {
        st = co_await s.items.get(item_id, d);
    } catch (const boost::system::system_error& e) {
        if (e.code() == asio::error::operation_aborted) throw;
        co_return unavailable("unavailable", std::string("store: ") + e.code().message());
    }
    if (!st.exists) co_return error_reply(http::status::not_found, "unknown_item", "no stock was set for this item");
    co_return reply(http::status::ok, item_json(item_id, st));
}

// The /items endpoints, behind the per-client limit. The limiter lives on the store, one Redis: a limiter over N
// independent nodes has no sound quorum rule, so a rate_limiter takes a redis, not the lock client.
asio::awaitable<response> item_endpoint(service& s, route r, request req, std::string client_id, deadline d)
{
    std::optional<redlock::rate_decision> decision;
    if (s.cfg.rate > 0) {
        redlock::rate_limiter limiter(s.store, "inventory:ratelimit:" + client_id,
                                      {.rate = s.cfg.rate,
                                       .period = s.cfg.rate_period,
                                       .burst = s.cfg.burst,
                                       .wait = 0ms,
                                       .node_timeout = std::min<std::chrono::milliseconds>(100ms, d.remaining())});
        auto [ec, dec] = co_await limiter.async_try_acquire(1, use_tuple);
        if (ec) {
            // Fail open: a limiter outage must not take the shop down with it (the locks still protect stock).
            s.stats.count_rate_limiter_error();
        } else if (dec.limited()) {
            s.stats.count_rate_limited();
            auto res =
                error_reply(http::status::too_many_requests, "rate_limited", "too many requests; see Retry-After");
            set_rate_limit_headers(res, dec);
            co_return res;
        } else {
            decision = dec;
        }
    }
    response res;
    if (r.kind == endpoint::reserve)
        res = co_await reserve(s, r.item_id, req, d);
    else if (r.kind == endpoint::put_item)
        res = co_await put_item(s, r.item_id, req, d);
    else
        res = co_await get_item(s, r.item_id, d);
    if (decision) set_rate_limit_headers(res, *decision);
    co_return res;
}

asio::awaitable<response> dispatch(service& s, route r, request req, std::string client_id, deadline d)
{
    switch (r.kind) {
        case endpoint::metrics:
            co_return metrics_reply(s);
        case endpoint::healthz:
            co_return reply(http::status::ok, "{\"status\":\"ok\"}");
        case endpoint::readyz:
            co_return co_await readiness_reply(s);
        case endpoint::not_found:
            co_return error_reply(http::status::not_found, "not_found", "no such endpoint");
        case endpoint::bad_item_id:
            co_return error_reply(http::status::bad_request, "bad_item_id", "item ids are 1 to 64 of [A-Za-z0-9_-]");
        case endpoint::bad_method: {
            auto res = error_reply(http::status::method_not_allowed, "method_not_allowed", "see the Allow header");
            res.set(http::field::allow, r.allow);
            co_return res;
        }
        case endpoint::get_item:
        case endpoint::put_item:
        case endpoint::reserve:
            break;
    }
    co_return co_await item_endpoint(s, std::move(r), std::move(req), std::move(client_id), d);
}

// Counts a request in flight for as long as it is handled, whichever way the handler leaves.
struct in_flight {
    explicit in_flight(metrics& m) : m_(m) { m_.request_started(); }
    ~in_flight() { m_.request_finished(); }
    in_flight(const in_flight&) = delete;
    in_flight& operator=(const in_flight&) = delete;
    metrics& m_;
};

}  // namespace

std::string client_id_of(const request& req, const std::string& peer_address)
{
    const auto key = req["X-Api-Key"];
    if (!key.empty() && valid_order_id(key)) return "key:" + std::string(key);
    return "addr:" + peer_address;
}

asio::awaitable<response> handle(service& s, request req, std::string client_id)
{
    const auto start = std::chrono::steady_clock::now();
    const auto d = deadline::after(s.cfg.request_timeout);
    in_flight counted(s.stats);
    route r = parse_route(req.method(), req.target());
    const endpoint kind = r.kind;
    response res;
    try {
        res = co_await dispatch(s, std::move(r), std::move(req), std::move(client_id), d);
    } catch (const boost::system::system_error& e) {
        if (e.code() == asio::error::operation_aborted) throw;  // the drain's deadline: the session ends
        log(redlock::log_level::error, std::string("handler: ") + e.what());
        res = error_reply(http::status::internal_server_error, "internal", "unexpected error");
    } catch (const std::exception& e) {
        log(redlock::log_level::error, std::string("handler: ") + e.what());
        res = error_reply(http::status::internal_server_error, "internal", "unexpected error");
    }
    s.stats.observe_request(kind, res.result_int(), std::chrono::steady_clock::now() - start);
    co_return res;
}

}  // namespace http_inventory
