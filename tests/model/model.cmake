# The model check of the waiting protocols (tests/model/run.sh: Spin on
# lock.pml, fair_lock.pml and read_write.pml), label "model". It does not depend on the build's flavour, so it
# is registered in the plain build only, not in the sanitizer, TSan or
# valgrind builds (scripts/test runs each of those stages too). It fails,
# not skips, when spin is missing (scripts/deps installs it).
if(NOT RLOCK_SANITIZE AND NOT RLOCK_TSAN AND NOT RLOCK_VALGRIND)
    find_program(RLOCK_BASH_MODEL bash REQUIRED)
    add_test(NAME model.waiting_protocol
             COMMAND ${CMAKE_COMMAND} -E env CC=${CMAKE_C_COMPILER}
                     ${RLOCK_BASH_MODEL} ${CMAKE_CURRENT_LIST_DIR}/run.sh
                     ${CMAKE_CURRENT_BINARY_DIR}/model)
    # COST: ctest starts it first (about 7 minutes), so the rest of the
    # suite runs beside it instead of after it.
    set_tests_properties(model.waiting_protocol PROPERTIES TIMEOUT 900 LABELS model COST 10000)
endif()
