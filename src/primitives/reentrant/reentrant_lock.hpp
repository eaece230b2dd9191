// The reentrant lock's attempts: an owner named by the caller takes the lock again while it holds it.
#pragma once

#include "primitives/common/acquire_loop.hpp"
#include "primitives/mutex/lock_call.hpp"

#include <memory>

namespace redlock::detail {

/// Turns a lock call into a reentrant one for the owner in call.lease.key_value: the key holds the owner, the
/// lease's token is the id of this hold, and the lease extends and releases this hold alone.
void make_reentrant(lock_call& call);

attempt_fn reentrant_attempts(std::shared_ptr<const lock_call> call);

}  // namespace redlock::detail
