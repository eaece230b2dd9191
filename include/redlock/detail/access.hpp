// The one door from the library's sources to the internals of its public types (as Boost.MySQL does):
// public classes keep their state and private constructors to themselves and befriend this struct only.
#pragma once

#include <redlock/diagnostics.hpp>

#include <string>
#include <utility>
#include <vector>

namespace redlock::detail {

struct access {
    /// The shared state behind a client or a lease.
    template <class T>
    static auto& impl(T& object) noexcept
    {
        return object.impl_;
    }
    template <class T>
    static const auto& impl(const T& object) noexcept
    {
        return object.impl_;
    }
    /// A public object made from internal state (a lease from its lease_state...).
    template <class T, class... Args>
    static T make(Args&&... args)
    {
        return T(std::forward<Args>(args)...);
    }

    static void set_client_message(diagnostics& d, std::string text) { d.client_message_ = std::move(text); }
    static void set_server_message(diagnostics& d, std::string text) { d.server_message_ = std::move(text); }
    static std::vector<node_outcome>& nodes(diagnostics& d) noexcept { return d.nodes_; }
    static wait_summary& waiting(diagnostics& d) { return d.waiting_; }
};

}  // namespace redlock::detail
