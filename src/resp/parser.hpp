// Incremental, zero-copy RESP3 pull parser (no I/O, no allocation after construction).
#pragma once

#include <redlock/resp/error.hpp>
#include <redlock/resp/limits.hpp>
#include <redlock/resp/node.hpp>

#include <boost/system/error_code.hpp>

#include <cstddef>
#include <optional>
#include <string_view>
#include <vector>

namespace redlock::resp {

/// Parses one top-level message into a pre-order sequence of nodes.
///
/// Each call to consume() gets the bytes of the current message from its first byte: the same prefix as the
/// previous call, possibly with more bytes appended. The parser remembers where it stopped, so nothing is
/// parsed twice and a large bulk string costs O(1) per call until it is complete.
///
/// Supported: every RESP3 type and the RESP2 nulls "$-1" and "*-1" (reported as type::null). An attribute
/// ('|') is reported as its own node, before the value it annotates, and does not count as an element of its
/// parent. Streamed strings and aggregates ("$?", "*?", ...) are rejected with error::streaming_not_supported:
/// Redis never sends them.
///
/// After an error the parser stays failed (every call reports it again) until reset().
class parser {
public:
    explicit parser(limits lim = {});

    /// The next node, or nullopt when more bytes are needed (ec clear), the message is done, or on error.
    std::optional<node> consume(std::string_view data, boost::system::error_code& ec);

    /// True once the last node of the top-level message has been returned.
    bool done() const noexcept { return done_; }

    /// Bytes of the message consumed so far (its full length once done()).
    std::size_t consumed() const noexcept { return consumed_; }

    /// Forget the current message (and any error); the next consume() starts a new one.
    void reset() noexcept;

private:
    std::optional<node> parse_next(std::string_view data, error& err);
    std::optional<node> parse_bulk_payload(std::string_view data, error& err);
    std::optional<std::string_view> read_line(std::string_view data, error& err);
    std::optional<node> emit(type t, std::size_t size, std::string_view value);

    limits limits_;
    std::vector<std::size_t> remaining_;  // elements still expected at each depth; sized max_depth + 1
    std::size_t depth_ = 0;
    std::size_t consumed_ = 0;
    std::size_t search_from_ = 0;  // where the CRLF search of an incomplete line resumes
    std::size_t bulk_length_ = 0;  // payload length of a bulk whose header is consumed
    type bulk_type_ = type::null;
    bool bulk_pending_ = false;
    bool done_ = false;
    error error_{};
};

}  // namespace redlock::resp
