// Everything public in one include.
#pragma once

#include <redlock/client.hpp>
#include <redlock/connection.hpp>
#include <redlock/diagnostics.hpp>
#include <redlock/error.hpp>
#include <redlock/fenced_write.hpp>
#include <redlock/key_layout.hpp>
#include <redlock/lease.hpp>
#include <redlock/lock_inspection.hpp>
#include <redlock/lock_options.hpp>
#include <redlock/logging.hpp>
#include <redlock/mutex.hpp>
#include <redlock/node.hpp>
#include <redlock/node_config.hpp>
#include <redlock/permit.hpp>
#include <redlock/rate_decision.hpp>
#include <redlock/rate_limit.hpp>
#include <redlock/rate_limiter.hpp>
#include <redlock/request.hpp>
#include <redlock/response.hpp>
#include <redlock/script.hpp>
#include <redlock/semaphore.hpp>
#include <redlock/semaphore_inspection.hpp>
#include <redlock/stats.hpp>
#include <redlock/with_lock.hpp>
#include <redlock/with_permit.hpp>
