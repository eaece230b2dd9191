#include "cli/bench/server_calls.hpp"

#include <redlock/connection.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>
#include <array>
#include <charconv>

namespace redlock::cli {

namespace asio = boost::asio;
constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);

namespace {

// One command on every node, one connection each; the replies of the nodes that answered.
asio::awaitable<std::vector<std::string>> on_every_node(asio::any_io_executor ex, const std::vector<node_config>& nodes,
                                                        std::string command, std::vector<std::string> args)
{
    std::vector<std::string> replies;
    for (const auto& config : nodes) {
        connection conn(ex, config);
        if (auto [cec] = co_await conn.async_connect(use_tuple); cec) continue;
        request req;
        req.push_range(command, args);
        response resp;
        auto [ec] = co_await conn.async_exec(req, resp, use_tuple);
        if (!ec && resp.size() == 1 && !resp[0].is_error()) replies.push_back(resp[0].text);
        conn.close();
    }
    co_return replies;
}

}  // namespace

// Arguments are named, not temporaries inside a co_await: g++ 12 may destroy those twice.
asio::awaitable<void> reset_server_stats(asio::any_io_executor ex, std::vector<node_config> nodes)
{
    std::string command = "CONFIG";
    std::vector<std::string> args{"RESETSTAT"};
    co_await on_every_node(ex, nodes, std::move(command), std::move(args));
}

asio::awaitable<command_calls> server_calls(asio::any_io_executor ex, std::vector<node_config> nodes)
{
    std::string command = "INFO";
    std::vector<std::string> args{"commandstats"};
    const auto infos = co_await on_every_node(ex, nodes, std::move(command), std::move(args));
    command_calls calls;
    for (const auto& info : infos) add_command_stats(info, calls);
    co_return calls;
}

void add_command_stats(std::string_view info, command_calls& into)
{
    constexpr std::array<std::string_view, 5> bookkeeping{"config", "info", "hello", "client", "ping"};
    constexpr std::string_view prefix = "cmdstat_", calls_field = ":calls=";
    for (std::size_t at = 0; at < info.size();) {
        auto end = info.find('\n', at);
        if (end == std::string_view::npos) end = info.size();
        auto line = info.substr(at, end - at);
        at = end + 1;
        if (!line.starts_with(prefix)) continue;
        const auto colon = line.find(calls_field);
        if (colon == std::string_view::npos) continue;
        std::string command(line.substr(prefix.size(), colon - prefix.size()));
        const auto name = std::string_view(command).substr(0, command.find('|'));  // "config|resetstat"
        if (std::find(bookkeeping.begin(), bookkeeping.end(), name) != bookkeeping.end()) continue;
        const auto digits = line.substr(colon + calls_field.size());
        std::uint64_t n = 0;
        if (std::from_chars(digits.data(), digits.data() + digits.size(), n).ec != std::errc{}) continue;
        auto it = std::find_if(into.begin(), into.end(), [&](const auto& c) { return c.first == command; });
        if (it == into.end())
            into.emplace_back(std::move(command), n);
        else
            it->second += n;
    }
    std::sort(into.begin(), into.end());
}

}  // namespace redlock::cli
