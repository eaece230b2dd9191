// `redlock bench`: the scenario the options name, run by the driver.
#include "cli/bench/bench.hpp"
#include "cli/bench/scenarios.hpp"

namespace redlock::cli {
namespace {

std::unique_ptr<bench_scenario> make_scenario(const bench_options& o)
{
    switch (o.kind) {
        case bench_options::scenario::hold:
            return hold_scenario(o);
        case bench_options::scenario::limiter:
            return limiter_scenario(o);
        case bench_options::scenario::semaphore:
            return semaphore_scenario(o);
        case bench_options::scenario::cache:
            return cache_scenario(o);
        case bench_options::scenario::uncontended:
        case bench_options::scenario::contended:
        case bench_options::scenario::handoff:
            break;
    }
    return lock_scenario(o);
}

int run_bench(const bench_options& o)
{
    bench_driver driver(o);
    // After the driver: the scenario's objects (a cache guard on a client) go first.
    const auto scenario = make_scenario(o);
    return driver.run(*scenario);
}

}  // namespace

subcommand bench_command()
{
    return {"bench", bench_help, &parse_and_run<parse_bench, run_bench>};
}

}  // namespace redlock::cli
