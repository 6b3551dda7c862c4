# Debian packages from the install components (CPack's DEB generator):
#
#   librlock0.1  (lib)  the shared library, named after its soname
#                       (librlock.so.0.1: librlock${RLOCK_SOVERSION})
#   librlock-dev (dev)  headers, CMake package files, rlock.pc, the static
#                       library and the librlock.so link
#   rlock        (tool) the rlock command and its man page
#
#   cmake -S . -B build-deb -DCMAKE_INSTALL_PREFIX=/usr -DRLOCK_BUILD_TESTS=OFF
#   cmake --build build-deb && (cd build-deb && cpack -G DEB)
#
# The packages install under /usr; configured with that prefix,
# GNUInstallDirs puts the libraries in Debian's multiarch directory
# (lib/x86_64-linux-gnu). dpkg-shlibdeps (dpkg-dev, and `file`) works out the
# run-time dependencies on Debian's hiredis, libev and OpenSSL library
# packages from the binaries themselves; librlock-dev names the -dev
# packages its CMake and pkg-config files need.
set(RLOCK_PACKAGE_CONTACT "rlock maintainers <rlock@localhost>"
    CACHE STRING "The Maintainer field of the Debian packages")

set(CPACK_PACKAGE_NAME rlock)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "${RLOCK_PACKAGE_CONTACT}")
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
# Stage with DESTDIR, CMAKE_INSTALL_PREFIX staying /usr: rlock.pc is
# written at install time from that prefix (CMakeLists.txt).
set(CPACK_SET_DESTDIR ON)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL lib dev)
if(RLOCK_BUILD_TOOLS)
    list(APPEND CPACK_COMPONENTS_ALL tool)
endif()
# name_version_arch.deb
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# The library package gets a shlibs file (and the ldconfig trigger), so packages built
# against it depend on it in turn.
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS ON)
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS_POLICY ">=")
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
# The shared library and the command without their debugging symbols, as
# Debian ships them (the static library keeps its own).
set(CPACK_STRIP_FILES ON)

set(CPACK_DEBIAN_LIB_PACKAGE_NAME librlock${RLOCK_SOVERSION})
set(CPACK_DEBIAN_LIB_PACKAGE_SECTION libs)
string(CONCAT CPACK_COMPONENT_LIB_DESCRIPTION
    "Redisson's distributed locks in C (shared library)\n"
    "rlock ports Redisson's lock family (reentrant, fair, spin, fenced,\n"
    "read/write, multi and red locks) to C11 on hiredis and libev, with the\n"
    "same Redis keys, scripts and channels, so C and Java processes locking\n"
    "the same name exclude and wake each other.")

# The CMake package files find hiredis through pkg-config and libev by hand;
# the static library needs OpenSSL's.
set(CPACK_DEBIAN_DEV_PACKAGE_NAME librlock-dev)
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
set(CPACK_DEBIAN_DEV_PACKAGE_DEPENDS
    "librlock${RLOCK_SOVERSION} (= ${CPACK_PACKAGE_VERSION}), libhiredis-dev, libev-dev, libssl-dev, pkgconf | pkg-config")
string(CONCAT CPACK_COMPONENT_DEV_DESCRIPTION
    "Redisson's distributed locks in C (development files)\n"
    "The headers, the static library, the CMake package (find_package(rlock):\n"
    "rlock::rlock, rlock::rlock_static) and the pkg-config file (rlock) of\n"
    "rlock, Redisson's lock family in C on hiredis and libev.")

set(CPACK_DEBIAN_TOOL_PACKAGE_NAME rlock)
set(CPACK_DEBIAN_TOOL_PACKAGE_SECTION utils)
string(CONCAT CPACK_COMPONENT_TOOL_DESCRIPTION
    "run a command under a Redisson-compatible distributed lock\n"
    "rlock runs a command under a lock held in Redis, from a shell or cron,\n"
    "and shows and releases locks; the locks are Redisson's, so Java\n"
    "processes using Redisson take turns with it on the same names.")

include(CPack)
