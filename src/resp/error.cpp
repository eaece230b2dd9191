#include <redlock/resp/error.hpp>

#include <string>

namespace redlock::resp {
namespace {

class error_category_impl final : public boost::system::error_category {
public:
    // redlock::condition::protocol recognises this exact name.
    const char* name() const noexcept override { return "redlock.resp"; }

    std::string message(int ev) const override
    {
        switch (static_cast<error>(ev)) {
            case error::invalid_type:
                return "RESP: unknown type byte";
            case error::invalid_integer:
                return "RESP: malformed or out-of-range integer";
            case error::invalid_double:
                return "RESP: malformed double";
            case error::invalid_boolean:
                return "RESP: boolean is neither t nor f";
            case error::invalid_length:
                return "RESP: malformed length or element count";
            case error::missing_crlf:
                return "RESP: missing CRLF terminator";
            case error::nesting_too_deep:
                return "RESP: aggregates nested too deep";
            case error::bulk_too_large:
                return "RESP: bulk string longer than the limit";
            case error::aggregate_too_large:
                return "RESP: aggregate with more elements than the limit";
            case error::line_too_long:
                return "RESP: line longer than the limit";
            case error::message_too_large:
                return "RESP: message larger than the limit";
            case error::invalid_null:
                return "RESP: null with a payload";
            case error::invalid_big_number:
                return "RESP: malformed big number";
            case error::invalid_verbatim:
                return "RESP: verbatim string without a format prefix";
            case error::streaming_not_supported:
                return "RESP: streamed strings and aggregates are not supported";
        }
        return "RESP error " + std::to_string(ev);
    }
};

}  // namespace

const boost::system::error_category& error_category() noexcept
{
    static const error_category_impl instance;
    return instance;
}

}  // namespace redlock::resp
