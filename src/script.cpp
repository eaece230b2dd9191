#include <redlock/script.hpp>

#include <array>
#include <openssl/sha.h>

namespace redlock {

namespace {
std::string sha1_hex(const std::string& text)
{
    std::array<unsigned char, SHA_DIGEST_LENGTH> digest{};
    SHA1(reinterpret_cast<const unsigned char*>(text.data()), text.size(), digest.data());
    static constexpr char hex[] = "0123456789abcdef";
    std::string out;
    out.reserve(2 * digest.size());
    for (unsigned char byte : digest) {
        out.push_back(hex[byte >> 4]);
        out.push_back(hex[byte & 0x0f]);
    }
    return out;
}
}  // namespace

script::script(std::string source)
{
    auto sha = sha1_hex(source);
    data_ = std::make_shared<const data>(data{std::move(source), std::move(sha)});
}

}  // namespace redlock
