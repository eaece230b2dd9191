// One line per event on stderr, with a UTC timestamp and a level: what a log collector expects of a service.
#pragma once

#include <redlock/logging.hpp>

#include <string_view>

namespace http_inventory {

void log(redlock::log_level level, std::string_view message);

}  // namespace http_inventory
