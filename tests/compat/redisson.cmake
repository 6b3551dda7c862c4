# Wire compatibility with the real Redisson (test_compat_redisson, the locks,
# and test_compat_redisson_sync, the semaphores and the count-down latch):
# included by tests/CMakeLists.txt after the test programs are registered.
#
# A ctest fixture, compat.mvn_package, builds the Java peer (tests/compat/java,
# one jar with Redisson and its dependencies) into
# ${CMAKE_BINARY_DIR}/compat/java with `mvn -q -B package`; every
# test_compat_redisson.* test requires it, and all of them carry the label
# "redisson" (ctest -L redisson). With java or mvn missing, or Maven unable
# to fetch what ~/.m2 lacks, the fixture fails with a message saying so, and
# the tests that need it fail too (ctest: "Failed to run because of fixture
# setup failure"): they never pass without running.
if(NOT TARGET test_compat_redisson)
    return()
endif()

find_program(RT_JAVA java)
find_program(RT_MVN mvn)
set(RT_JAVA_PEER_DIR ${CMAKE_BINARY_DIR}/compat/java)
set(RT_REDISSON_JAR ${RT_JAVA_PEER_DIR}/redisson-peer.jar)
if(RT_JAVA)
    set(rt_java_path ${RT_JAVA})
else()
    set(rt_java_path "")
    message(STATUS "java not found: test_compat_redisson will fail (install a JDK and maven)")
endif()

add_test(NAME compat.mvn_package
         COMMAND ${CMAKE_COMMAND} -DMVN=${RT_MVN} -DJAVA=${rt_java_path}
                 -DSRC=${CMAKE_CURRENT_SOURCE_DIR}/compat/java -DDST=${RT_JAVA_PEER_DIR}
                 -P ${CMAKE_CURRENT_SOURCE_DIR}/compat/mvn_package.cmake)
set_tests_properties(compat.mvn_package PROPERTIES FIXTURES_SETUP rt_redisson_java
                                                   LABELS redisson TIMEOUT 600)

# The C program finds java and the jar through these (the environment
# variables RT_JAVA and RT_REDISSON_JAR override them). Under RLOCK_VALGRIND,
# valgrind wraps the test program only: it does not follow it into java.
foreach(target test_compat_redisson test_compat_redisson_sync)
    if(TARGET ${target})
        target_compile_definitions(${target} PRIVATE RT_JAVA="${rt_java_path}"
                                                     RT_REDISSON_JAR="${RT_REDISSON_JAR}")
    endif()
endforeach()
get_property(rt_all_tests DIRECTORY PROPERTY TESTS)
foreach(t IN LISTS rt_all_tests)
    if(t MATCHES "^test_compat_redisson(_sync)?\\.")
        set_tests_properties(${t} PROPERTIES FIXTURES_REQUIRED rt_redisson_java LABELS redisson)
    endif()
    # A Redis Cluster (six servers): one at a time, as test_cluster's.
    if(t MATCHES "^test_compat_redisson\\.test_cluster_")
        set_tests_properties(${t} PROPERTIES RESOURCE_LOCK redis_cluster)
    endif()
endforeach()
