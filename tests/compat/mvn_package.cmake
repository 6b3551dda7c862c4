# Builds the Redisson peer (SRC: tests/compat/java) into DST with Maven:
#   cmake -DMVN=<mvn> -DJAVA=<java> -DSRC=<tests/compat/java> -DDST=<build>/compat/java -P mvn_package.cmake
# Run by the compat.mvn_package ctest fixture. Skips Maven when DST's jar
# was built from the sources as they are. Maven's output goes to
# DST/mvn.log; on failure its tail is printed with one line saying why.
foreach(var MVN JAVA SRC DST)
    if(NOT DEFINED ${var})
        message(FATAL_ERROR "mvn_package.cmake: -D${var}= is required")
    endif()
endforeach()
if(NOT JAVA OR NOT EXISTS "${JAVA}")
    message(FATAL_ERROR "java not found: the Redisson compatibility tests need a JDK (17 or "
                        "later). Install default-jdk-headless and maven (scripts/deps), then "
                        "re-run cmake.")
endif()
if(NOT MVN OR NOT EXISTS "${MVN}")
    message(FATAL_ERROR "mvn not found: the Redisson compatibility tests need Maven to build "
                        "their Java peer. Install maven (scripts/deps), then re-run cmake.")
endif()

# What the jar is built from: the pom and every source file.
file(GLOB_RECURSE sources RELATIVE "${SRC}" "${SRC}/pom.xml" "${SRC}/src/*")
list(SORT sources)
set(stamp_text "")
foreach(f IN LISTS sources)
    file(SHA256 "${SRC}/${f}" h)
    string(APPEND stamp_text "${f} ${h}\n")
endforeach()
set(jar "${DST}/redisson-peer.jar")
set(stamp "${DST}/.rlock-built")
if(EXISTS "${stamp}" AND EXISTS "${jar}")
    file(READ "${stamp}" old)
    if(old STREQUAL stamp_text)
        message(STATUS "the Redisson peer is up to date: ${jar}")
        return()
    endif()
endif()

file(MAKE_DIRECTORY "${DST}")
file(REMOVE "${stamp}" "${jar}")
set(log "${DST}/mvn.log")
execute_process(
    COMMAND "${MVN}" -q -B -f "${SRC}/pom.xml" "-Dpeer.buildDir=${DST}" package
    OUTPUT_FILE "${log}"
    ERROR_FILE "${log}"
    RESULT_VARIABLE rc
    TIMEOUT 540)
if(NOT rc EQUAL 0 OR NOT EXISTS "${jar}")
    file(STRINGS "${log}" lines)
    list(LENGTH lines n)
    set(first 0)
    if(n GREATER 25)
        math(EXPR first "${n} - 25")
    endif()
    set(tail "")
    if(n GREATER 0)
        list(SUBLIST lines ${first} -1 tail_lines)
        list(JOIN tail_lines "\n  " tail)
    endif()
    message(FATAL_ERROR
            "mvn package of the Redisson peer failed (${rc}); the last lines of ${log}:\n  ${tail}\n"
            "The first build needs Maven Central to be reachable (or ~/.m2 to hold Redisson and "
            "its dependencies already); later builds work offline.")
endif()
file(WRITE "${stamp}" "${stamp_text}")
message(STATUS "built the Redisson peer: ${jar}")
