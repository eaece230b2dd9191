// What a leadership shares with the operations on it: the lease on the election key, and the value proclaimed.
#pragma once

#include "primitives/common/client_impl.hpp"

#include <redlock/election.hpp>
#include <redlock/lease.hpp>
#include <redlock/lock_options.hpp>

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

namespace redlock::detail {

class leadership_state {
public:
    leadership_state(std::shared_ptr<client_impl> c, std::string n, lock_options o, redlock::lease l)
        : client(std::move(c)), name(std::move(n)), options(o), held(std::move(l))
    {}

    const std::shared_ptr<client_impl> client;
    const std::string name;
    const lock_options options;  ///< checked, node_timeout set
    /// Its release (a resignation, or this state's end) publishes on the release channel: candidates and observers
    /// hear it.
    redlock::lease held;

    /// The next revision to proclaim; on the client's strand.
    std::uint64_t next_revision = 1;

    /// The value a quorum holds, read from any thread.
    std::string value() const
    {
        std::lock_guard lock(mutex_);
        return value_;
    }
    std::uint64_t revision() const
    {
        std::lock_guard lock(mutex_);
        return revision_;
    }
    /// After a proclaim of `revision` reached a quorum (a later one may have succeeded first).
    void proclaimed(std::string value, std::uint64_t revision)
    {
        std::lock_guard lock(mutex_);
        if (revision <= revision_) return;
        value_ = std::move(value);
        revision_ = revision;
    }

private:
    mutable std::mutex mutex_;
    std::string value_;
    std::uint64_t revision_ = 0;
};

}  // namespace redlock::detail
