# Wire compatibility with node-redisson (test_compat_node): included by
# tests/CMakeLists.txt after the test programs are registered.
#
# A ctest fixture, compat.npm_install, installs the pinned packages
# (package.json + package-lock.json, npm ci) into ${CMAKE_BINARY_DIR}/compat,
# next to a copy of peer.js; every test_compat_node.* test requires it. With
# node or npm missing, the fixture fails with a message saying so, and the
# tests that need it fail too (ctest: "Failed to run because of fixture
# setup failure"): they never pass without running.
if(NOT TARGET test_compat_node)
    return()
endif()

find_program(RT_NODE NAMES node nodejs)
find_program(RT_NPM npm)
set(RT_COMPAT_DIR ${CMAKE_BINARY_DIR}/compat)
if(RT_NODE)
    set(rt_node_path ${RT_NODE})
else()
    set(rt_node_path "")
    message(STATUS "node not found: test_compat_node will fail (install nodejs and npm)")
endif()

# Copied at configure time; cmake re-runs when peer.js changes.
configure_file(${CMAKE_CURRENT_SOURCE_DIR}/compat/peer.js ${RT_COMPAT_DIR}/peer.js COPYONLY)

add_test(NAME compat.npm_install
         COMMAND ${CMAKE_COMMAND} -DNPM=${RT_NPM} -DNODE=${rt_node_path}
                 -DSRC=${CMAKE_CURRENT_SOURCE_DIR}/compat -DDST=${RT_COMPAT_DIR}
                 -P ${CMAKE_CURRENT_SOURCE_DIR}/compat/npm_install.cmake)
set_tests_properties(compat.npm_install PROPERTIES FIXTURES_SETUP rt_node_redisson TIMEOUT 300)

# The C program finds node and the peer through these (the environment
# variables RT_NODE and RT_COMPAT_DIR override them). Under RLOCK_VALGRIND,
# valgrind wraps the test program only: it does not follow it into node.
target_compile_definitions(test_compat_node PRIVATE RT_NODE="${rt_node_path}"
                                                    RT_COMPAT_DIR="${RT_COMPAT_DIR}")
get_property(rt_all_tests DIRECTORY PROPERTY TESTS)
foreach(t IN LISTS rt_all_tests)
    if(t MATCHES "^test_compat_node\\.")
        set_tests_properties(${t} PROPERTIES FIXTURES_REQUIRED rt_node_redisson)
    endif()
endforeach()
