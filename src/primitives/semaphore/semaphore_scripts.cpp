#include "common/embedded_script.hpp"
#include "lua/semaphore.hpp"
#include "primitives/common/fair_attempts.hpp"
#include "primitives/semaphore/semaphore_scripts.hpp"

#include <redlock/key_layout.hpp>

namespace redlock::detail::semaphore_scripts {

namespace {

std::string units_key(const std::string& name)
{
    return aux_name(name, "units");
}

// The permits' set and their units: every script that removes a permit keeps both in step.
std::vector<std::string> permit_keys(const std::string& name)
{
    return {name, units_key(name)};
}

// And the limit, which lives as long as the permits.
std::vector<std::string> permit_and_limit_keys(const std::string& name)
{
    return {name, units_key(name), limit_key(name)};
}

std::string ms_text(std::chrono::milliseconds d)
{
    return std::to_string(d.count());
}

}  // namespace

const script& acquire()
{
    return embedded_script<lua::semaphore_acquire>();
}

const script& fair_acquire()
{
    return embedded_script<lua::semaphore_fair_acquire>();
}

const script& extend()
{
    return embedded_script<lua::semaphore_extend>();
}

const script& extend_many()
{
    return embedded_script<lua::semaphore_extend_many>();
}

const script& release()
{
    return embedded_script<lua::semaphore_release>();
}

const script& fair_release()
{
    return embedded_script<lua::semaphore_fair_release>();
}

const script& set_limit()
{
    return embedded_script<lua::semaphore_set_limit>();
}

std::string limit_key(const std::string& name)
{
    return aux_name(name, "limit");
}

request acquire_request(const std::string& name, const std::string& id, std::int64_t units,
                        std::chrono::milliseconds ttl, std::int64_t limit, std::chrono::milliseconds node_timeout)
{
    request req;
    req.push_script(acquire(), permit_and_limit_keys(name),
                    {id, std::to_string(units), ms_text(ttl), std::to_string(limit), ms_text(key_margin)});
    req.set_timeout(node_timeout);
    return req;
}

request fair_acquire_request(const std::string& name, const std::string& id, std::int64_t units,
                             std::chrono::milliseconds ttl, std::int64_t limit, std::chrono::milliseconds waiter_ttl,
                             std::uint64_t ticket, bool take_ticket, std::chrono::milliseconds node_timeout)
{
    auto keys = permit_and_limit_keys(name);
    keys.insert(keys.end(), {aux_name(name, "queue"), aux_name(name, "alive"), aux_name(name, "ticket")});
    request req;
    req.push_script(fair_acquire(), keys,
                    {id, std::to_string(units), ms_text(ttl), std::to_string(limit), ms_text(key_margin),
                     ms_text(waiter_ttl), std::to_string(ticket), take_ticket ? "1" : "0", release_channel(name)});
    req.set_timeout(node_timeout);
    return req;
}

request extend_request(const lease_spec& permit, std::chrono::milliseconds ttl, std::chrono::milliseconds node_timeout)
{
    const auto& name = permit.routing_key();
    request req;
    req.push_script(extend(), permit_and_limit_keys(name), {permit.token, ms_text(ttl), ms_text(key_margin)});
    req.set_timeout(node_timeout);
    return req;
}

request extend_batch_request(const std::vector<batch_entry>& permits, std::chrono::milliseconds node_timeout)
{
    std::vector<std::string> keys, args{ms_text(key_margin)};
    keys.reserve(3 * permits.size());
    args.reserve(1 + 2 * permits.size());
    for (const auto& p : permits) {
        auto own = permit_and_limit_keys(p.lease->routing_key());
        keys.insert(keys.end(), std::make_move_iterator(own.begin()), std::make_move_iterator(own.end()));
        args.push_back(p.lease->token);
        args.push_back(ms_text(p.ttl));
    }
    request req;
    req.push_script(extend_many(), keys, args);
    req.set_timeout(node_timeout);
    return req;
}

request release_request(const lease_spec& permit, std::string_view release_id, std::chrono::milliseconds node_timeout)
{
    const auto& name = permit.routing_key();
    request req;
    req.push_script(release(), permit_keys(name),
                    std::vector<std::string>{permit.token, std::string(release_id), release_channel(name)});
    req.set_timeout(node_timeout);
    return req;
}

namespace {
request fair_release_request(const std::string& name, const std::string& id, std::string_view release_id,
                             std::chrono::milliseconds node_timeout, bool leave)
{
    auto keys = permit_keys(name);
    keys.insert(keys.end(), {aux_name(name, "queue"), aux_name(name, "alive")});
    request req;
    req.push_script(fair_release(), keys,
                    std::vector<std::string>{id, std::string(release_id), release_channel(name), leave ? "1" : "0"});
    req.set_timeout(node_timeout);
    return req;
}
}  // namespace

request fair_release_and_leave(const lease_spec& permit, std::string_view release_id,
                               std::chrono::milliseconds node_timeout)
{
    return fair_release_request(permit.routing_key(), permit.token, release_id, node_timeout, true);
}

request fair_release_keeping_place(const lease_spec& permit, std::string_view release_id,
                                   std::chrono::milliseconds node_timeout)
{
    return fair_release_request(permit.routing_key(), permit.token, release_id, node_timeout, false);
}

request set_limit_request(const std::string& name, std::int64_t limit, std::string_view change_id,
                          std::chrono::milliseconds least_life, std::chrono::milliseconds node_timeout)
{
    auto keys = permit_and_limit_keys(name);
    keys.insert(keys.end(), {aux_name(name, "queue"), aux_name(name, "alive")});
    request req;
    req.push_script(set_limit(), keys,
                    std::vector<std::string>{std::to_string(limit), release_channel(name), std::string(change_id),
                                             ms_text(least_life)});
    req.set_timeout(node_timeout);
    return req;
}

request inspect_request(const std::string& name, std::chrono::milliseconds node_timeout)
{
    request req;
    req.push("ZRANGE", name, 0, -1, "WITHSCORES");
    req.push("HGETALL", units_key(name));
    req.push("GET", limit_key(name));
    req.push("TIME");
    req.push("ZCARD", aux_name(name, "queue"));
    req.set_timeout(node_timeout);
    return req;
}

namespace {

std::optional<std::int64_t> script_result(error_code ec, const response& resp)
{
    if (ec || resp.size() != 1) return std::nullopt;
    return resp[0].as_integer();
}

// The limit a node appends to its answer to either acquire.
std::optional<std::int64_t> limit_in(const response& resp)
{
    if (resp.size() != 1 || resp[0].data_type != resp::type::array || resp[0].elements.empty()) return std::nullopt;
    const auto limit = resp[0].elements.back().as_integer();
    if (!limit || *limit < 0) return std::nullopt;
    return limit;
}

}  // namespace

acquire_answer read_acquire(error_code ec, const response& resp)
{
    acquire_answer a;
    if (ec || resp.size() != 1 || resp[0].data_type != resp::type::array) return a;
    const auto& e = resp[0].elements;
    a.limit = limit_in(resp);
    if (!a.limit) return a;
    if (e.size() == 3 && e[0].as_integer() == 1) {  // {1, units held, limit}
        a.verdict = vote::yes;
    } else if (e.size() == 4 && e[0].as_integer() == 0) {  // {0, wait, units held, limit}
        a.verdict = vote::no;
        if (const auto wait = e[1].as_integer(); wait && *wait >= 0) a.wait = std::chrono::milliseconds(*wait);
    }
    return a;
}

acquire_answer read_fair_acquire(error_code ec, const response& resp)
{
    auto a = read_queue_answer(ec, resp);
    if (a.verdict == vote::error) return a;  // else resp is one array, as read_queue_answer checked
    a.limit = limit_in(resp);
    // {1, "0", ticket counter, limit} or {0, wait, ticket counter, ticket, limit}: the queue's answer and the limit.
    const auto size = a.verdict == vote::yes ? 4u : 5u;
    if (!a.limit || resp[0].elements.size() != size) a.verdict = vote::error;
    return a;
}

vote classify_extend(error_code ec, const response& resp)
{
    auto n = script_result(ec, resp);
    if (!n) return vote::error;
    return *n > 0 ? vote::yes : vote::no;
}

std::optional<std::chrono::milliseconds> extended_for(const response& resp)
{
    auto n = script_result({}, resp);
    if (!n || *n <= 0) return std::nullopt;
    return std::chrono::milliseconds(*n);
}

bool not_held(const response& resp)
{
    return script_result({}, resp) == 0;
}

vote classify_release(error_code ec, const response& resp)
{
    auto n = script_result(ec, resp);
    if (!n || *n < 0) return vote::error;
    return *n > 0 ? vote::yes : vote::no;
}

}  // namespace redlock::detail::semaphore_scripts
