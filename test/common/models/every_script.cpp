#include "common/models/every_script.hpp"
#include "primitives/common/token_lease.hpp"
#include "primitives/election/election_scripts.hpp"
#include "primitives/fair/fair_scripts.hpp"
#include "primitives/mutex/plain_scripts.hpp"
#include "primitives/rate_limit/rate_scripts.hpp"
#include "primitives/reentrant/reentrant_scripts.hpp"
#include "primitives/rwlock/rwlock_scripts.hpp"
#include "primitives/semaphore/semaphore_scripts.hpp"
#include "recipes/cache/cache_store.hpp"

#include <redlock/bloom_filter.hpp>
#include <redlock/fenced_write.hpp>
#include <redlock/key_layout.hpp>

#include <chrono>

namespace redlock::test {

using namespace std::chrono_literals;

std::vector<request> every_script_request(const std::string& name)
{
    using detail::fence_step;
    detail::lease_spec lease;
    lease.keys = {name};
    lease.token = std::string(32, 'a');
    lease.key_value = "owner";
    lease.units = 3;
    lease.limit = 5;
    std::vector<request> built;
    for (const auto step : {fence_step::none, fence_step::read, fence_step::increment}) {
        built.push_back(detail::plain_scripts::acquire_request(lease.keys, lease.token, 1000ms, 50ms, step));
        built.push_back(detail::fair_scripts::acquire_request(name, lease.token, 1000ms, 2000ms, 7, true, step, 50ms));
        built.push_back(detail::reentrant_scripts::acquire_request(name, "owner", lease.token, 1000ms, 50ms, step));
    }
    built.push_back(detail::token_lease::extend_request(lease, 1000ms, 50ms));
    built.push_back(detail::token_lease::commit_request(lease, 9, 50ms));
    built.push_back(detail::token_lease::repair_request(lease, 1000ms, 50ms));
    built.push_back(detail::plain_scripts::release_request(lease, "r", 50ms));
    built.push_back(detail::fair_scripts::release_keeping_place(lease, "r", 50ms));
    built.push_back(detail::fair_scripts::release_and_leave(lease, "r", 50ms));
    built.push_back(detail::reentrant_scripts::commit_request(lease, 9, 50ms));
    built.push_back(detail::reentrant_scripts::extend_request(lease, 1000ms, 50ms));
    built.push_back(detail::reentrant_scripts::release_request(lease, "r", 50ms));
    // Each family on a name of its own in the same slot: one's key types do not meet another's (WRONGTYPE).
    const auto semaphore = aux_name(name, "semaphore");
    namespace sem = detail::semaphore_scripts;
    lease.keys = {semaphore};
    built.push_back(sem::acquire_request(semaphore, lease.token, 3, 1000ms, 5, 50ms));
    built.push_back(sem::fair_acquire_request(semaphore, lease.token, 3, 1000ms, 5, 2000ms, 7, true, 50ms));
    built.push_back(sem::extend_request(lease, 1000ms, 50ms));
    built.push_back(sem::release_request(lease, "r", 50ms));
    built.push_back(sem::fair_release_and_leave(lease, "r", 50ms));
    built.push_back(sem::fair_release_keeping_place(lease, "r", 50ms));
    built.push_back(sem::set_limit_request(semaphore, 4, "c", 1000ms, 50ms));
    const auto rw = aux_name(name, "rwlock");
    namespace rws = detail::rwlock_scripts;
    lease.keys = {rw};
    built.push_back(rws::read_acquire_request(rw, lease.token, 1000ms, 50ms));
    for (const auto step : {fence_step::none, fence_step::read, fence_step::increment})
        built.push_back(rws::write_acquire_request(rw, lease.token, 1000ms, 2000ms, true, step, 50ms));
    built.push_back(rws::release_request(lease, "r", 50ms));
    built.push_back(rws::release_keeping_mark(lease, "r", 50ms));
    built.push_back(rws::release_write_side(lease, "r", 50ms));
    built.push_back(rws::read_extend_request(lease, 1000ms, 50ms));
    built.push_back(rws::read_extend_batch_request({{&lease, 1000ms}, {&lease, 2000ms}}, 50ms));
    built.push_back(
        detail::election_scripts::proclaim_request(aux_name(name, "election"), lease.token, 9, "value", 2, "m", 50ms));
    for (const auto strategy :
         {redlock::rate_strategy::gcra, redlock::rate_strategy::fixed_window, redlock::rate_strategy::sliding_window})
        built.push_back(detail::rate_scripts::decision_request(
            aux_name(name, "rate-" + std::to_string(static_cast<int>(strategy))),
            {.strategy = strategy, .rate = 10, .burst = strategy == redlock::rate_strategy::gcra ? 2 : 0}, 1));
    for (const bool add : {true, false})
        built.push_back(std::move(detail::bloom_request(aux_name(name, "bloom"), 1000, 3, {"item"}, add)->req));
    built.push_back(detail::store_request(aux_name(name, "cache"), 9, "rlc1 v 9 0 0 0\n", 1000ms));
    fenced_write write(aux_name(name, "guard"), 9);
    write.command("SET", aux_name(name, "data"), {"v"});
    built.push_back(write.to_request());
    return built;
}

std::vector<std::string> scripts_called(const request& req)
{
    std::vector<std::string> out;
    for (const auto& call : req.script_calls()) out.push_back(call.code.sha1());
    return out;
}

}  // namespace redlock::test
