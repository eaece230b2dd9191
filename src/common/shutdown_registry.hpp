// Handlers an object keeps itself (async_connect's waiters, requests in its queue) are no Asio operations: the
// execution context's shutdown does not destroy them. When such a handler owns the coroutine frame that owns the
// object, that cycle outlives the context (a leak whenever a context is destroyed with a connect or a request
// pending). Asio's own I/O objects destroy their pending operations in their service's shutdown(); an object that
// keeps handlers enrolls here to do the same.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/execution_context.hpp>

#include <memory>
#include <mutex>
#include <vector>

namespace redlock::detail {

class shutdown_participant {
public:
    virtual ~shutdown_participant() = default;
    /// At the context's shutdown (no thread runs it any more): destroy every kept handler without calling it.
    virtual void drop_handlers() noexcept = 0;
};

class shutdown_registry : public boost::asio::execution_context::service {
public:
    using key_type = shutdown_registry;
    static inline boost::asio::execution_context::id id;

    explicit shutdown_registry(boost::asio::execution_context& context) : service(context) {}

    /// Enrolls `participant` with the execution context of `ex` (after make_shared: the registry holds it weakly).
    static void enroll(const boost::asio::any_io_executor& ex, std::weak_ptr<shutdown_participant> participant)
    {
        auto& context = boost::asio::query(ex, boost::asio::execution::context);
        boost::asio::use_service<shutdown_registry>(context).add(std::move(participant));
    }

private:
    void add(std::weak_ptr<shutdown_participant> participant)
    {
        std::lock_guard lock(mutex_);
        if (participants_.size() >= prune_at_) {  // amortized: the list stays within twice the live participants
            std::erase_if(participants_, [](const auto& p) { return p.expired(); });
            prune_at_ = std::max<std::size_t>(64, 2 * participants_.size());
        }
        participants_.push_back(std::move(participant));
    }

    void shutdown() override
    {
        std::vector<std::weak_ptr<shutdown_participant>> all;
        {
            std::lock_guard lock(mutex_);
            all.swap(participants_);
        }
        // Dropping one participant's handlers may destroy another participant: each is held while it drops.
        for (auto& weak : all) {
            if (auto participant = weak.lock()) participant->drop_handlers();
        }
    }

    std::mutex mutex_;
    std::vector<std::weak_ptr<shutdown_participant>> participants_;
    std::size_t prune_at_ = 64;
};

}  // namespace redlock::detail
