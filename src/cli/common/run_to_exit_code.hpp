// Runs a subcommand's coroutine to its end and turns the way it ended into the process's exit code.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>

#include <exception>
#include <string>
#include <string_view>

namespace redlock::cli {

// Returns what `body` returned. An exception escaping it, or another coroutine of the command, is a defect of ours, not
// an outcome of the command: it prints "redlock: <command>: internal error: <what>" and becomes exit_code::lost, so a
// script never takes a crash for success. Stops `ctx` when `body` ends: background work (reconnects, timers) does not
// hold it.
int run_to_exit_code(boost::asio::io_context& ctx, boost::asio::awaitable<int> body, std::string_view command);

// What an internal error says: the exception's what(), or "unknown exception".
std::string describe_exception(const std::exception_ptr& e);

}  // namespace redlock::cli
