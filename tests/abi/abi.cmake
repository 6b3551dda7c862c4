# ABI tests (label abi).
#
# abi.old_consumer: a program built against this version's headers (N) runs
# against the next minor version's shared library (N+1), simulated by
# rt_abi_next: the library's sources built against a copy of the headers
# whose rlock_config, rlock_stats and rlock_backoff each have one more
# field at the end, as a minor release may add. The program's structs are
# then shorter than the library's: it must neither write nor read past them
# (tests/abi/old_consumer.c).

set(rt_abi_next ${CMAKE_CURRENT_BINARY_DIR}/abi_next)
file(GLOB rt_abi_headers CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/include/rlock/*.h)
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${rt_abi_headers})
file(REMOVE_RECURSE ${rt_abi_next})
file(COPY ${rt_abi_headers} DESTINATION ${rt_abi_next}/rlock)

# Adds the line `field` at the end of the struct `type` in header.
function(rt_abi_grow header type field)
    file(READ ${rt_abi_next}/rlock/${header} text)
    string(FIND "${text}" "} ${type};" end)
    if(end EQUAL -1)
        message(FATAL_ERROR "tests/abi/abi.cmake: no '} ${type};' in ${header}")
    endif()
    string(SUBSTRING "${text}" 0 ${end} head)
    string(SUBSTRING "${text}" ${end} -1 tail)
    file(WRITE ${rt_abi_next}/rlock/${header} "${head}    ${field}\n${tail}")
endfunction()
rt_abi_grow(config.h rlock_config "int64_t abi_next_setting_ms;")
rt_abi_grow(client.h rlock_stats "uint64_t abi_next_counter;")
rt_abi_grow(lock.h rlock_backoff "int64_t abi_next_jitter_ms;")

# The library of N+1: the sources as rlock_objects builds them, the grown
# headers first. RLOCK__ABI_NEXT_TEST turns off the checks that name each
# struct's last field (src/config_init.c, src/client.c, src/kinds/spin_lock.c).
add_library(rt_abi_next SHARED EXCLUDE_FROM_ALL ${RLOCK_SOURCES} ${RLOCK_LUA_C})
set_target_properties(rt_abi_next PROPERTIES C_VISIBILITY_PRESET hidden)
# The embedded Lua sources are generated for rlock_objects.
set_source_files_properties(${RLOCK_LUA_C} PROPERTIES GENERATED TRUE)
add_dependencies(rt_abi_next rlock_objects)
target_compile_definitions(rt_abi_next PRIVATE _POSIX_C_SOURCE=200809L RLOCK__ABI_NEXT_TEST)
target_include_directories(rt_abi_next BEFORE PRIVATE ${rt_abi_next})
target_include_directories(rt_abi_next PRIVATE ${PROJECT_SOURCE_DIR}/src ${PROJECT_BINARY_DIR}/include
                                               ${PROJECT_BINARY_DIR}/generated ${UTHASH_INCLUDE_DIR})
target_link_libraries(rt_abi_next PRIVATE PkgConfig::HIREDIS rlock_libev Threads::Threads
                                          OpenSSL::SSL)

add_executable(rt_abi_old_consumer ${CMAKE_CURRENT_SOURCE_DIR}/abi/old_consumer.c)
target_include_directories(rt_abi_old_consumer PRIVATE ${PROJECT_SOURCE_DIR}/include
                                                       ${PROJECT_BINARY_DIR}/include)
target_link_libraries(rt_abi_old_consumer PRIVATE rt_abi_next)
add_test(NAME abi.old_consumer COMMAND rt_abi_old_consumer)
set_tests_properties(abi.old_consumer PROPERTIES TIMEOUT 60 LABELS abi)

# abi.check: the shared library's ABI against abi/librlock.abi.xml
# (tests/abi/abi_check.sh; skipped without abigail-tools or debug info).
add_test(NAME abi.check COMMAND ${RLOCK_BASH} ${CMAKE_CURRENT_SOURCE_DIR}/abi/abi_check.sh
                                $<TARGET_FILE:rlock> ${PROJECT_SOURCE_DIR} ${PROJECT_BINARY_DIR})
set_tests_properties(abi.check PROPERTIES TIMEOUT 60 LABELS abi SKIP_RETURN_CODE 77)
