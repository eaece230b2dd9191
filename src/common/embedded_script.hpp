// A Lua script embedded at build time (cmake/RedlockLua.cmake) as a `script`: made on first use, once.
#pragma once

#include <redlock/script.hpp>

#include <string>
#include <string_view>

namespace redlock::detail {

/// `Text` is one of the generated redlock::detail::lua constants (e.g. lua::common_extend).
template <const std::string_view& Text>
const script& embedded_script()
{
    static const script s{std::string(Text)};
    return s;
}

}  // namespace redlock::detail
