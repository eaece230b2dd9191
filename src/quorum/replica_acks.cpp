#include "quorum/replica_acks.hpp"

#include <redlock/detail/access.hpp>

#include <string>

namespace redlock::detail {

request acknowledged(const request& req, replica_acks acks)
{
    request out = req;
    out.push("WAIT", acks.replicas, acks.timeout.count());
    out.set_timeout(req.timeout() + acks.timeout);
    return out;
}

error_code judge_acknowledgement(error_code ec, response& resp, std::size_t expected, replica_acks acks,
                                 classify_fn classify, diagnostics& diag)
{
    // A request cut short (a deadline, a lost connection) has no WAIT reply to judge: it failed anyway.
    if (resp.size() != expected || resp.empty() || resp.back().is_error()) return ec;
    const auto acknowledged_by = resp.back().as_integer();
    resp.pop_back();
    if (ec) return ec;  // an error reply of the request's own
    if (!acknowledged_by) return make_error_code(error::protocol_error);
    if (*acknowledged_by >= static_cast<std::int64_t>(acks.replicas) || classify(ec, resp) != vote::yes) return ec;
    access::set_client_message(diag, "not acknowledged by " + std::to_string(acks.replicas) + " replica(s) within " +
                                         std::to_string(acks.timeout.count()) + " ms (" +
                                         std::to_string(*acknowledged_by) + " did)");
    return make_error_code(error::replica_acks);
}

}  // namespace redlock::detail
