#include "log.hpp"

#include <chrono>
#include <cstdio>
#include <ctime>
#include <string>

namespace http_inventory {

void log(redlock::log_level level, std::string_view message)
{
    const auto now = std::chrono::system_clock::now();
    const auto t = std::chrono::system_clock::to_time_t(now);
    const auto millis = std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
    std::tm utc{};
    ::gmtime_r(&t, &utc);
    char stamp[32];
    std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S", &utc);
    // One fprintf per line: lines from the redlock client's thread do not interleave with ours.
    std::fprintf(stderr, "%s.%03dZ %s %.*s\n", stamp, static_cast<int>(millis), redlock::to_string(level),
                 static_cast<int>(message.size()), message.data());
}

}  // namespace http_inventory
