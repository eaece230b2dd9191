// The subcommands: each runs to completion and returns the process's exit code.
#pragma once

#include "options.hpp"

namespace redlock::cli {

int run_exec(const exec_options& options);
int run_throttle(const throttle_options& options);
int run_status(const status_options& options);
int run_bench(const bench_options& options);
// `redlock bench --scenario hold` (bench_hold.cpp).
int run_bench_hold(const bench_options& options);
// `redlock bench --scenario limiter` (bench_limiter.cpp).
int run_bench_limiter(const bench_options& options);
// `redlock bench --scenario semaphore` (bench_semaphore.cpp).
int run_bench_semaphore(const bench_options& options);

}  // namespace redlock::cli
