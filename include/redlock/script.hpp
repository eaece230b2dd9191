// A Lua script with its SHA1, so requests can run it by EVALSHA and fall back to EVAL on NOSCRIPT.
#pragma once

#include <memory>
#include <string>

namespace redlock {

/// A Lua script and its SHA1, for request::push_script (EVALSHA, and EVAL after NOSCRIPT). Copies share the source;
/// make each script once (a function-local static) so its SHA1 is computed once. Immutable: any thread.
class script {
public:
    explicit script(std::string source);

    const std::string& source() const noexcept { return data_->source; }
    /// Lowercase hex SHA1 of the source, as SCRIPT LOAD returns it.
    const std::string& sha1() const noexcept { return data_->sha1; }

private:
    struct data {
        std::string source;
        std::string sha1;
    };
    std::shared_ptr<const data> data_;  // copies of a script share one source
};

}  // namespace redlock
