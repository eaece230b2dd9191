#include "cli/common/exit_codes.hpp"
#include "cli/common/output.hpp"
#include "cli/common/run_to_exit_code.hpp"

#include <boost/asio/co_spawn.hpp>

#include <exception>
#include <string>

namespace redlock::cli {

std::string describe_exception(const std::exception_ptr& e)
{
    try {
        std::rethrow_exception(e);
    } catch (const std::exception& x) {
        return x.what();
    } catch (...) {
        return "unknown exception";
    }
}

int run_to_exit_code(boost::asio::io_context& ctx, boost::asio::awaitable<int> body, std::string_view command)
{
    int code = exit_code::lost;
    auto internal_error = [&](const std::exception_ptr& e) {
        write_stderr("redlock: " + std::string(command) + ": internal error: " + describe_exception(e) + "\n");
        code = exit_code::lost;
    };
    boost::asio::co_spawn(ctx, std::move(body), [&](std::exception_ptr e, int result) {
        if (e)
            internal_error(e);
        else
            code = result;
        ctx.stop();
    });
    try {
        ctx.run();
    } catch (...) {  // from another coroutine of the command (a bench worker spawned with `rethrow`)
        internal_error(std::current_exception());
        ctx.stop();
    }
    return code;
}

}  // namespace redlock::cli
