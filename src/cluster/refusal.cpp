#include "cluster/refusal.hpp"
#include "common/host_port.hpp"

#include <charconv>

namespace redlock::detail {

namespace {

template <class Int>
std::optional<Int> number(std::string_view text, long long max)
{
    long long n = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
    if (text.empty() || ec != std::errc{} || end != text.data() + text.size() || n < 0 || n > max) return std::nullopt;
    return static_cast<Int>(n);
}

std::optional<master_address> read_target(std::string_view text, std::string_view answered_host)
{
    auto read = read_host_port(text);
    if (!read || read->host.find_first_of(" []") != std::string_view::npos) return std::nullopt;
    return master_address{std::string(read->host.empty() ? answered_host : read->host), read->port};
}

}  // namespace

std::optional<cluster_refusal> read_refusal(std::string_view error_text, std::string_view answered_host)
{
    auto word_end = error_text.find(' ');
    const auto word = error_text.substr(0, word_end);
    auto retry_later = [](cluster_refusal::kind what) {
        cluster_refusal r;
        r.what = what;
        return r;
    };
    if (word == "TRYAGAIN") return retry_later(cluster_refusal::kind::try_again);
    if (word == "CLUSTERDOWN") return retry_later(cluster_refusal::kind::cluster_down);
    if (word != "MOVED" && word != "ASK") return std::nullopt;
    if (word_end == std::string_view::npos) return std::nullopt;
    auto rest = error_text.substr(word_end + 1);
    const auto slot_end = rest.find(' ');
    if (slot_end == std::string_view::npos) return std::nullopt;
    auto slot = number<std::uint16_t>(rest.substr(0, slot_end), cluster_slots - 1);
    auto target = read_target(rest.substr(slot_end + 1), answered_host);
    if (!slot || !target) return std::nullopt;
    return cluster_refusal{.what = word == "MOVED" ? cluster_refusal::kind::moved : cluster_refusal::kind::ask,
                           .slot = *slot,
                           .target = *std::move(target)};
}

std::optional<cluster_refusal> read_refusal(const response& replies, std::string_view answered_host)
{
    if (replies.empty() || !replies.front().is_error()) return std::nullopt;
    return read_refusal(replies.front().error_text(), answered_host);
}

}  // namespace redlock::detail
