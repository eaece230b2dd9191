// A declared size is the peer's claim, not bytes received: the codec must not allocate for it.
#include "resp/parser.hpp"
#include "resp/reader.hpp"

#include <boost/test/unit_test.hpp>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>

namespace {
std::atomic<std::size_t> allocated_bytes{0};
}  // namespace

// Count every allocation of this test executable. g++ flags malloc/free inside replaced new/delete once they
// are inlined into a new-expression: that pairing is exactly what a replacement is.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif
void* operator new(std::size_t n)
{
    allocated_bytes += n;
    if (void* p = std::malloc(n == 0 ? 1 : n)) return p;
    throw std::bad_alloc();
}
void* operator new[](std::size_t n)
{
    return operator new(n);
}
void operator delete(void* p) noexcept
{
    std::free(p);
}
void operator delete[](void* p) noexcept
{
    std::free(p);
}
void operator delete(void* p, std::size_t) noexcept
{
    std::free(p);
}
void operator delete[](void* p, std::size_t) noexcept
{
    std::free(p);
}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

namespace resp = redlock::resp;

namespace {

// Bytes allocated while a fresh reader takes `data` and is asked for values.
std::size_t bytes_allocated_reading(const std::string& data, boost::system::error_code& ec)
{
    resp::reader r;
    const auto space = r.prepare(data.size());
    std::memcpy(space.data(), data.data(), data.size());
    r.commit(data.size());
    const std::size_t before = allocated_bytes;
    while (r.next(ec)) {
    }
    return allocated_bytes - before;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(resp_alloc)

BOOST_AUTO_TEST_CASE(the_counter_sees_received_payloads)
{
    boost::system::error_code ec;
    BOOST_TEST(bytes_allocated_reading("$100\r\n" + std::string(100, 'x') + "\r\n", ec) >= 100u);
}

BOOST_AUTO_TEST_CASE(declared_huge_bulk_allocates_nothing_before_its_bytes)
{
    boost::system::error_code ec;
    BOOST_TEST(bytes_allocated_reading("$67108864\r\nabc", ec) < 4096u);
    BOOST_TEST(!ec);
}

BOOST_AUTO_TEST_CASE(declared_huge_aggregates_allocate_only_for_received_elements)
{
    for (const char* data : {"*1048576\r\n:1\r\n:2\r\n", "%1048576\r\n+k\r\n+v\r\n", "~1048576\r\n+a\r\n",
                             ">1048576\r\n+a\r\n", "|1048576\r\n+a\r\n+b\r\n"}) {
        boost::system::error_code ec;
        BOOST_TEST(bytes_allocated_reading(data, ec) < 4096u, data);
        BOOST_TEST(!ec);
    }
}

BOOST_AUTO_TEST_CASE(parser_does_not_allocate_while_parsing)
{
    resp::parser p;
    const std::string data = "*3\r\n$67108864\r\n";
    const std::size_t before = allocated_bytes;
    boost::system::error_code ec;
    while (p.consume(data, ec)) {
    }
    BOOST_TEST(allocated_bytes - before == 0u);
    BOOST_TEST(!ec);
}

BOOST_AUTO_TEST_CASE(rejected_sizes_allocate_nothing)
{
    for (const char* data : {"$67108865\r\n", "*1048577\r\n", "%99999999999\r\n"}) {
        boost::system::error_code ec;
        BOOST_TEST(bytes_allocated_reading(data, ec) == 0u, data);
        BOOST_TEST(ec);
    }
}

BOOST_AUTO_TEST_SUITE_END()
