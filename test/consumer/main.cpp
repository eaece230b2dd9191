// Built against an installed redlock (find_package(redlock CONFIG)): the umbrella header includes every public
// header, so a header missing from the install fails the build; the client below pulls in the connection code,
// so a dependency missing from redlock::redlock's link interface (Boost.URL, OpenSSL, threads) fails the link.
#include <redlock/redlock.hpp>

#include <boost/asio/io_context.hpp>

int main()
{
    boost::asio::io_context ctx;
    // Nothing runs on ctx: no server is needed.
    redlock::client client(ctx.get_executor(), {redlock::parse_url("rediss://127.0.0.1:6379")});
    client.close();
    return redlock::make_error_code(redlock::error::timeout) == redlock::condition::timeout ? 0 : 1;
}
