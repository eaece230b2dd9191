#include "cli/common/command_line.hpp"
#include "cli/common/duration.hpp"
#include "cli/common/nodes.hpp"

#include <redlock/semaphore.hpp>

#include <boost/program_options.hpp>

#include <algorithm>
#include <charconv>

namespace redlock::cli {
namespace {

namespace po = boost::program_options;

constexpr auto parser_style = po::command_line_style::default_style & ~po::command_line_style::allow_guessing;

// Smaller is meaningless over a network, and the library's drift allowance alone is 2 ms + 1%.
constexpr ms min_ttl{10};

}  // namespace

flags_and_command split_at_double_dash(const std::vector<std::string>& args)
{
    auto separator = std::find(args.begin(), args.end(), "--");
    flags_and_command out{{args.begin(), separator}, std::nullopt};
    if (separator != args.end()) out.command.emplace(separator + 1, args.end());
    return out;
}

std::vector<std::string> checked_command(std::vector<std::string> command, const std::string& subcommand)
{
    if (command.empty()) throw usage_error("no command after '--'", subcommand);
    if (command.front().empty()) throw usage_error("the command name is empty", subcommand);
    return command;
}

command_line::command_line(std::string command, const po::options_description& flags,
                           const std::vector<std::string>& args, std::string_view positional_hint)
    : command_(std::move(command))
{
    po::options_description all;
    all.add(flags);
    all.add_options()("help,h", po::bool_switch())("nodes", po::value<std::vector<std::string>>()->composing())(
        "verbose,v", po::bool_switch())("quiet,q", po::bool_switch());
    // Arguments that are no flag land here, to be refused with a hint.
    all.add_options()("_positional", po::value<std::vector<std::string>>());
    po::positional_options_description positional;
    positional.add("_positional", -1);
    try {
        po::store(po::command_line_parser(args).options(all).positional(positional).style(parser_style).run(), vm_);
        po::notify(vm_);
    } catch (const po::error& e) {
        throw error(e.what());
    }
    if (vm_.count("_positional")) {
        std::string what = "unexpected argument '" + vm_["_positional"].as<std::vector<std::string>>().front() + "'";
        if (!positional_hint.empty()) what += ": " + std::string(positional_hint);
        throw error(what);
    }
}

bool command_line::is_set(const char* name) const
{
    return vm_[name].as<bool>();
}

std::optional<std::string> command_line::text(const char* name) const
{
    if (!vm_.count(name)) return std::nullopt;
    return vm_[name].as<std::string>();
}

ms command_line::duration(const char* name, ms fallback) const
{
    auto given = text(name);
    if (!given) return fallback;
    static_assert(max_duration == std::chrono::hours(87'600), "the message below names the limit");
    duration_error why{};
    auto d = parse_duration(*given, &why);
    if (!d && why == duration_error::too_long)
        throw error(std::string("--") + name + ": '" + *given + "' is too long (at most 87600h, 10 years)");
    if (!d)
        throw error(std::string("--") + name + ": '" + *given +
                    "' is not a duration (use 250ms, 10s, 2m, or plain milliseconds)");
    return *d;
}

int command_line::positive_int(const char* name, int fallback) const
{
    auto given = text(name);
    if (!given) return fallback;
    int n = 0;
    auto [end, ec] = std::from_chars(given->data(), given->data() + given->size(), n);
    if (given->empty() || ec != std::errc{} || end != given->data() + given->size() || n < 1)
        throw error(std::string("--") + name + ": '" + *given + "' is not a positive integer");
    return n;
}

std::int64_t command_line::count(const char* name, std::int64_t fallback, std::int64_t least) const
{
    auto given = text(name);
    if (!given) return fallback;
    std::int64_t n = 0;
    auto [end, ec] = std::from_chars(given->data(), given->data() + given->size(), n);
    if (given->empty() || ec != std::errc{} || end != given->data() + given->size() || n < least)
        throw error(std::string("--") + name + ": '" + *given + "' is not a whole number from " +
                    std::to_string(least) + " up");
    return n;
}

int command_line::replica_acks() const
{
    const auto n = count("replica-acks", 0, 0);
    if (n > 100) throw error("--replica-acks: at most 100 replicas");
    return static_cast<int>(n);
}

ms command_line::replica_ack_timeout() const
{
    if (given("replica-ack-timeout") && replica_acks() == 0)
        throw error("--replica-ack-timeout goes with --replica-acks");
    return duration("replica-ack-timeout", ms(0));
}

std::string command_line::key() const
{
    auto key = text("key");
    if (!key) throw error("--key NAME is required");
    if (key->empty()) throw error("--key must not be empty");
    return *key;
}

ms command_line::ttl(ms fallback) const
{
    const ms ttl = duration("ttl", fallback);
    if (ttl <= ms(0)) throw error("--ttl must be positive");
    if (ttl < min_ttl) throw error("--ttl must be at least " + format_duration(min_ttl));
    return ttl;
}

std::int64_t command_line::limit() const
{
    const int limit = positive_int("limit", 1);
    static_assert(semaphore::max_limit == 1'000'000, "the message below names the limit");
    if (limit > semaphore::max_limit) throw error("--limit: at most 1000000 permits");
    return limit;
}

rate_strategy command_line::strategy() const
{
    auto given = text("strategy");
    if (!given) return rate_strategy::gcra;
    auto s = parse_strategy(*given);
    if (!s) throw error("--strategy: '" + *given + "' is not a strategy (gcra, fixed-window or sliding-window)");
    return *s;
}

std::optional<rate_spec> command_line::rate() const
{
    auto given = text("rate");
    if (!given) return std::nullopt;
    auto r = parse_rate(*given);
    if (!r)
        throw error("--rate: '" + *given +
                    "' is not a rate: N/PERIOD with N from 1 to 10^12 and PERIOD s, m, h, d or a DURATION up to 720h "
                    "(10/s, 100/m, 3/1500ms)");
    return r;
}

verbosity command_line::output() const
{
    const bool verbose = is_set("verbose");
    const bool quiet = is_set("quiet");
    if (verbose && quiet) throw error("-v and -q contradict each other");
    return verbose ? verbosity::verbose : quiet ? verbosity::quiet : verbosity::normal;
}

std::vector<node_config> command_line::nodes() const
{
    return node_list(given("nodes") ? vm_["nodes"].as<std::vector<std::string>>() : std::vector<std::string>{},
                     command_);
}

}  // namespace redlock::cli
