#include "common/hex.hpp"

#include <redlock/script.hpp>

#include <array>
#include <openssl/sha.h>

namespace redlock {

namespace {
std::string sha1_hex(const std::string& text)
{
    std::array<unsigned char, SHA_DIGEST_LENGTH> digest{};
    SHA1(reinterpret_cast<const unsigned char*>(text.data()), text.size(), digest.data());
    return detail::to_hex(digest);
}
}  // namespace

script::script(std::string source)
{
    auto sha = sha1_hex(source);
    data_ = std::make_shared<const data>(data{std::move(source), std::move(sha)});
}

}  // namespace redlock
