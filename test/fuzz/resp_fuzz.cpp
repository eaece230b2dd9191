// libFuzzer target for the RESP3 reader (parser + value builder). Run from the repository root:
//
//   cmake -S . -B build/resp-fuzz -G Ninja -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_C_COMPILER=clang \
//         -DREDLOCK_BUILD_FUZZERS=ON -DREDLOCK_BUILD_TESTS=OFF -DREDLOCK_BUILD_EXAMPLES=OFF
//   cmake --build build/resp-fuzz --target resp_fuzz
//   rm -rf /tmp/resp-corpus && cp -r test/fuzz/corpus /tmp/resp-corpus   # new inputs must not land in git
//   build/resp-fuzz/test/fuzz/resp_fuzz -max_total_time=30 -rss_limit_mb=2048 /tmp/resp-corpus
//
// Input layout: byte 0 = (bit 3: use tiny limits) | (bits 0-2: k); the next k bytes are chunk sizes
// (each + 1, cycled; k = 0 feeds one byte at a time); the rest is what the peer sends. Most seed files are
// plain RESP behind one 0x00 byte.
//
// Invariants checked: no crash, leak or UB; the same bytes give the same values and the same error whether
// they arrive in one read or in the fuzzer's chunks; to_string() renders every value.
#include "resp/reader.hpp"

#include <redlock/resp/value.hpp>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <vector>

namespace resp = redlock::resp;

namespace {

struct outcome {
    std::vector<resp::value> values;
    boost::system::error_code ec;
    std::size_t buffered = 0;
};

outcome read_all(std::string_view data, const std::vector<std::size_t>& chunks, const resp::limits& lim)
{
    resp::reader r(lim);
    outcome out;
    std::size_t pos = 0;
    for (std::size_t i = 0; pos < data.size() && !out.ec; ++i) {
        const std::size_t n = std::min(chunks[i % chunks.size()], data.size() - pos);
        const auto space = r.prepare(n);
        std::memcpy(space.data(), data.data() + pos, n);
        r.commit(n);
        pos += n;
        while (auto v = r.next(out.ec)) out.values.push_back(std::move(*v));
    }
    out.buffered = r.buffered();
    return out;
}

void check(bool ok)
{
    if (!ok) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* bytes, std::size_t size)
{
    if (size == 0) return 0;
    const std::size_t k = std::min<std::size_t>(bytes[0] & 7, size - 1);
    resp::limits lim;
    if (bytes[0] & 8)
        lim = {.max_depth = 3,
               .max_bulk_length = 16,
               .max_aggregate_size = 8,
               .max_line_length = 16,
               .max_message_size = 64};
    std::vector<std::size_t> chunks;
    for (std::size_t i = 1; i <= k; ++i) chunks.push_back(std::size_t{bytes[i]} + 1);
    if (chunks.empty()) chunks.push_back(1);
    const std::string_view data(reinterpret_cast<const char*>(bytes) + 1 + k, size - 1 - k);

    const outcome chunked = read_all(data, chunks, lim);
    const outcome whole = read_all(data, {data.size() + 1}, lim);

    check(chunked.ec == whole.ec);
    check(chunked.values == whole.values);
    if (!whole.ec) check(chunked.buffered == whole.buffered && whole.buffered <= data.size());
    if (whole.ec) check(std::string_view(whole.ec.category().name()) == "redlock.resp");
    for (const auto& v : whole.values) {
        const auto text = resp::to_string(v);
        check(!text.empty() || (v.data_type == resp::type::simple_string && v.text.empty()));
    }
    return 0;
}
