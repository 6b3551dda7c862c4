/* The end of every test program's main(): argv[1], when given, names the
 * one test to run, so ctest can run each test in a process of its own. A
 * name that is no test of the program fails the run (a stale binary or a
 * renamed test must not pass by running nothing). */
#ifndef RT_MAIN_H
#define RT_MAIN_H

#include <stdio.h>
#include <string.h>

static inline int rt_run_tests(const struct CMUnitTest *tests, size_t n, int argc, char **argv) {
    if (argc > 1) {
        size_t i = 0;
        while (i < n && strcmp(tests[i].name, argv[1]) != 0) {
            i++;
        }
        if (i == n) {
            fprintf(stderr, "%s: no test named \"%s\"\n", argv[0], argv[1]);
            return 1;
        }
        cmocka_set_test_filter(argv[1]);
    }
    return _cmocka_run_group_tests("tests", tests, n, NULL, NULL);
}

#define RT_RUN_TESTS(tests, argc, argv)                                                            \
    rt_run_tests((tests), sizeof(tests) / sizeof((tests)[0]), (argc), (argv))

#endif
