# The "doxygen" test: cmake -DDOXYGEN=<doxygen> -DDOXYFILE=<Doxyfile>
#   -DXML_DIR=<its XML output> -P doxygen_check.cmake
#
# Runs doxygen, which fails on any warning (WARN_AS_ERROR in the Doxyfile):
# an undocumented function, parameter, return value, struct field, macro or
# typedef. Doxygen does not warn about an undocumented enum value, so this
# then reads the XML output and fails when an enum value has no text, or
# when the main page does not link to the guides.
cmake_policy(VERSION 3.18)
execute_process(COMMAND ${DOXYGEN} ${DOXYFILE} RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
    message(FATAL_ERROR "doxygen failed (every warning is an error): ${rc}")
endif()
file(GLOB xml_files ${XML_DIR}/*_8h.xml)
if(NOT xml_files)
    message(FATAL_ERROR "doxygen wrote no XML for the headers in ${XML_DIR}")
endif()
set(undocumented "")
set(count 0)
foreach(f IN LISTS xml_files)
    file(READ ${f} xml)
    while(TRUE)
        string(FIND "${xml}" "<enumvalue " start)
        if(start EQUAL -1)
            break()
        endif()
        string(SUBSTRING "${xml}" ${start} -1 xml)
        string(FIND "${xml}" "</enumvalue>" end)
        string(SUBSTRING "${xml}" 0 ${end} v)
        string(SUBSTRING "${xml}" ${end} -1 xml)
        math(EXPR count "${count} + 1")
        string(REGEX MATCH "<name>([^<]*)</name>" _ "${v}")
        set(name "${CMAKE_MATCH_1}") # before MATCHES resets CMAKE_MATCH_1
        if(NOT v MATCHES "<para>")
            list(APPEND undocumented "${name}")
        endif()
    endwhile()
endforeach()
if(undocumented)
    message(FATAL_ERROR "enum values without documentation: ${undocumented}")
endif()
# The front page (api_mainpage.md.in) is there and leads to the guides.
if(NOT EXISTS ${XML_DIR}/indexpage.xml)
    message(FATAL_ERROR "the reference has no main page (${XML_DIR}/indexpage.xml)")
endif()
file(READ ${XML_DIR}/indexpage.xml index)
foreach(guide recipes.md locks.md)
    string(FIND "${index}" "${guide}" at)
    if(at EQUAL -1)
        message(FATAL_ERROR "the reference's main page does not link to docs/${guide}")
    endif()
endforeach()
message(STATUS "doxygen: no warnings; all ${count} enum values documented")
