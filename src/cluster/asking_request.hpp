// What an ASK redirect sends: ASKING, then the refused request, as one request.
#pragma once

#include <redlock/request.hpp>

namespace redlock::detail {

/// `ASKING` followed by the commands of `req`, its scripts still scripts (EVALSHA with the NOSCRIPT fallback),
/// and its timeout. One request, because the server forgets ASKING after the next command: the connection puts
/// the SCRIPT LOADs a request needs ahead of the whole request, never between ASKING and the command it allows.
/// The replies are ASKING's `OK`, then those of `req`.
request asking_request(const request& req);

}  // namespace redlock::detail
