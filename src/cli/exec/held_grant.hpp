// What `redlock exec` holds while the command runs: a lock's lease or one permit of a semaphore. A permit is a
// lease underneath (permit::lease()), so exec reads validity and loss the same way for both; releasing and
// watching for loss go through whichever owns the lease.
#pragma once

#include <redlock/lease.hpp>
#include <redlock/permit.hpp>

#include <chrono>
#include <cstdint>
#include <string>
#include <utility>

namespace redlock::cli {

class held_grant {
public:
    held_grant() = default;
    explicit held_grant(redlock::lease held) noexcept : lease_(std::move(held)) {}
    explicit held_grant(redlock::permit held) noexcept : permit_(std::move(held)) {}

    explicit operator bool() const noexcept { return static_cast<bool>(lease()); }
    bool is_permit() const noexcept { return static_cast<bool>(permit_); }
    const redlock::lease& lease() const noexcept { return permit_ ? permit_.lease() : lease_; }

    const std::string& token() const noexcept { return lease().token(); }
    std::uint64_t fencing_token() const noexcept { return lease().fencing_token(); }
    std::chrono::steady_clock::time_point valid_until() const noexcept { return lease().valid_until(); }
    std::chrono::milliseconds validity() const noexcept { return lease().validity(); }
    bool lost() const noexcept { return lease().lost(); }

    // Both owners complete with the same signature; the token decides the return type, the same for both.
    template <class Token>
    auto async_release(Token&& token)
    {
        if (permit_) return permit_.async_release(std::forward<Token>(token));
        return lease_.async_release(std::forward<Token>(token));
    }
    template <class Token>
    auto async_wait_lost(diagnostics& diag, Token&& token)
    {
        if (permit_) return permit_.async_wait_lost(diag, std::forward<Token>(token));
        return lease_.async_wait_lost(diag, std::forward<Token>(token));
    }

private:
    redlock::lease lease_;    // a lock's
    redlock::permit permit_;  // or a semaphore's
};

}  // namespace redlock::cli
