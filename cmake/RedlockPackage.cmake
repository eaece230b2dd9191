# Debian packages from the install rules: `cpack -G DEB` in a build tree (scripts/dev package does it for the
# release preset) makes one package per install component:
#   libredlock-dev  (component dev)  headers, the static library, the CMake package (find_package(redlock))
#   redlock         (component cli)  the command-line tool
# The files land under /usr (CPack's packaging prefix), whatever CMAKE_INSTALL_PREFIX is. Only for the top-level
# project: a parent that adds this one with add_subdirectory keeps its own CPack settings.
if(NOT PROJECT_IS_TOP_LEVEL)
  return()
endif()

set(REDLOCK_PACKAGE_MAINTAINER "redlock-asio maintainers <maintainers@users.noreply.a-seed-3ec2144c.example>"
  CACHE STRING "Maintainer field of the Debian packages")
set(REDLOCK_PACKAGE_RELEASE 1 CACHE STRING "Debian revision of the packages (the version is the project's)")

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME redlock)
set(CPACK_PACKAGE_VENDOR redlock-asio)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT ${REDLOCK_PACKAGE_MAINTAINER})
set(CPACK_PACKAGE_DIRECTORY ${PROJECT_BINARY_DIR}/packages)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_SOURCE_IGNORE_FILES "/[.]git" "/build/") # for `cpack --config CPackSourceConfig.cmake`
set(CPACK_STRIP_FILES ON) # the CLI's symbol table (CMake never strips a static library)

set(CPACK_COMPONENTS_ALL dev)
if(REDLOCK_BUILD_CLI)
  list(APPEND CPACK_COMPONENTS_ALL cli)
endif()
set(CPACK_DEB_COMPONENT_INSTALL ON)

set(CPACK_DEBIAN_PACKAGE_MAINTAINER ${REDLOCK_PACKAGE_MAINTAINER})
set(CPACK_DEBIAN_PACKAGE_RELEASE ${REDLOCK_PACKAGE_RELEASE})
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT) # <name>_<version>-<release>_<arch>.deb; the arch from dpkg

set(CPACK_DEBIAN_DEV_PACKAGE_NAME libredlock-dev)
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
# What a consumer's find_package(redlock) finds in turn (cmake/redlockConfig.cmake.in): Boost's headers and
# CMake config, Boost.URL, OpenSSL. The library is static: no runtime package of its own.
set(CPACK_DEBIAN_DEV_PACKAGE_DEPENDS "libboost1.81-dev, libboost-url1.81-dev, libssl-dev (>= 3)")
set(CPACK_DEBIAN_DEV_PACKAGE_SUGGESTS redlock)
# Each package's description: the first line is its summary (CPACK_PACKAGE_DESCRIPTION_SUMMARY stays unset, or
# CPackDeb puts it before both).
set(CPACK_DEBIAN_DEV_DESCRIPTION "distributed locks on Redis for C++20 and Boost.Asio - development files
redlock-asio is a C++20 library of distributed coordination primitives on
Redis, built on Boost.Asio coroutines: a lock on one Redis node and the
Redlock algorithm over N independent nodes, a watchdog that keeps a lease
alive, fencing tokens, fair and reentrant locks, counting and fair
semaphores, rate limiting and a cache guard against stampedes.

This package holds the headers, the static library and the CMake package:
find_package(redlock CONFIG), then link to redlock::redlock.")

set(CPACK_DEBIAN_CLI_PACKAGE_NAME redlock)
set(CPACK_DEBIAN_CLI_PACKAGE_SECTION utils)
set(CPACK_DEBIAN_CLI_PACKAGE_SHLIBDEPS ON) # dpkg-shlibdeps: libc6, libstdc++6, libssl3, Boost.ProgramOptions
# (No double quotes in a description: CPack mangles them.)
set(CPACK_DEBIAN_CLI_DESCRIPTION "run a command under a distributed lock on Redis
redlock is the command-line tool of redlock-asio. Its exec command runs a
command under a lock or a semaphore permit held on one Redis node, or by the
Redlock algorithm over N independent nodes, as flock(1) does on one host.
The throttle command rate-limits commands, status shows who holds a lock,
and bench measures lock throughput and latency.")

include(CPack)
