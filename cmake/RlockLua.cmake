# rlock_embed_lua(<out_var> PREFIX <p> TABLE <t> FILES <f>...): generates <t>.c/.h in the
# binary dir from the Lua files and puts the .c in <out_var>.
function(rlock_embed_lua out_var)
    cmake_parse_arguments(ARG "" "PREFIX;TABLE" "FILES" ${ARGN})
    set(out_c "${CMAKE_CURRENT_BINARY_DIR}/generated/${ARG_TABLE}.c")
    set(out_h "${CMAKE_CURRENT_BINARY_DIR}/generated/${ARG_TABLE}.h")
    list(JOIN ARG_FILES "|" files_arg)
    add_custom_command(
        OUTPUT "${out_c}" "${out_h}"
        COMMAND ${CMAKE_COMMAND} -E make_directory "${CMAKE_CURRENT_BINARY_DIR}/generated"
        COMMAND ${CMAKE_COMMAND} -DOUT_C=${out_c} -DOUT_H=${out_h} -DPREFIX=${ARG_PREFIX}
                -DTABLE=${ARG_TABLE} "-DFILES=${files_arg}"
                -P "${PROJECT_SOURCE_DIR}/cmake/embed_lua.cmake"
        DEPENDS ${ARG_FILES} "${PROJECT_SOURCE_DIR}/cmake/embed_lua.cmake"
        COMMENT "Embedding Lua scripts into ${ARG_TABLE}.c"
        VERBATIM)
    set(${out_var} "${out_c}" PARENT_SCOPE)
endfunction()
