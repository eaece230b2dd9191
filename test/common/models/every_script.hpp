// A request of every Lua script of the library, built as the primitives build them, for one lock or semaphore name:
// what the tests run against a Redis Cluster (each script's keys in one slot) and check covers every embedded script.
#pragma once

#include <redlock/request.hpp>

#include <string>
#include <vector>

namespace redlock::test {

/// One request per way the library calls a script on `name` (acquire of each kind and fencing step, extend,
/// commit, repair, release, limit change, rate decisions, Bloom filter, cache store). Not the watchdog's batched
/// extensions (extend_many): they span leases and go only to nodes that run requests across slots.
std::vector<request> every_script_request(const std::string& name);

/// The SHA1s of the scripts `req` calls (EVALSHA), in order.
std::vector<std::string> scripts_called(const request& req);

}  // namespace redlock::test
