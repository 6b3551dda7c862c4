# Installs the node-redisson peer's packages into DST, exactly as pinned by
# package-lock.json (npm ci). Run by the compat.npm_install ctest fixture:
#   cmake -DNPM=<npm> -DNODE=<node> -DSRC=<tests/compat> -DDST=<build>/compat -P npm_install.cmake
# Skips npm when DST already holds what this lock file describes.
foreach(var NPM NODE SRC DST)
    if(NOT DEFINED ${var})
        message(FATAL_ERROR "npm_install.cmake: -D${var}= is required")
    endif()
endforeach()
if(NOT NODE OR NOT EXISTS "${NODE}")
    message(FATAL_ERROR "node (Node.js) not found: the node-redisson compatibility tests need it. "
                        "Install the nodejs and npm packages (scripts/deps), then re-run cmake.")
endif()
if(NOT NPM OR NOT EXISTS "${NPM}")
    message(FATAL_ERROR "npm not found: the node-redisson compatibility tests need it to install "
                        "node-redisson. Install the nodejs and npm packages (scripts/deps), then "
                        "re-run cmake.")
endif()

file(MAKE_DIRECTORY "${DST}")
set(stamp_text "")
foreach(f package.json package-lock.json .npmrc)
    configure_file("${SRC}/${f}" "${DST}/${f}" COPYONLY)
    file(SHA256 "${SRC}/${f}" h)
    string(APPEND stamp_text "${f} ${h}\n")
endforeach()

set(stamp "${DST}/node_modules/.rlock-installed")
if(EXISTS "${stamp}" AND EXISTS "${DST}/node_modules/node-redisson/package.json")
    file(READ "${stamp}" old)
    if(old STREQUAL stamp_text)
        message(STATUS "node-redisson peer packages are up to date in ${DST}/node_modules")
        return()
    endif()
endif()

# npm itself is a node script: make sure the node found above runs it.
get_filename_component(node_dir "${NODE}" DIRECTORY)
set(ENV{PATH} "${node_dir}:$ENV{PATH}")
execute_process(
    COMMAND "${NPM}" ci --no-audit --no-fund --ignore-scripts --legacy-peer-deps
    WORKING_DIRECTORY "${DST}"
    RESULT_VARIABLE rc
    TIMEOUT 240)
if(NOT rc EQUAL 0)
    message(FATAL_ERROR "npm ci in ${DST} failed (${rc}): the node-redisson peer's packages could "
                        "not be installed; the registry must be reachable the first time.")
endif()
file(WRITE "${stamp}" "${stamp_text}")
message(STATUS "installed the node-redisson peer packages into ${DST}/node_modules")
