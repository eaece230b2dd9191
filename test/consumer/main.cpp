// Built against an installed redlock (find_package(redlock CONFIG)): the headers are found and the library links.
#include <redlock/error.hpp>

int main()
{
    return redlock::make_error_code(redlock::error::timeout) == redlock::condition::timeout ? 0 : 1;
}
