// The one Boost.Test entry point shared by every test executable.
#define BOOST_TEST_MODULE redlock
#include <boost/test/unit_test.hpp>
