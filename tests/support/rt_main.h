/* The end of every test program's main(): argv[1], when given, names the
 * one test to run, so ctest can run each test in a process of its own. */
#ifndef RT_MAIN_H
#define RT_MAIN_H

#define RT_RUN_TESTS(tests, argc, argv)                                                            \
    ((argc) > 1 ? cmocka_set_test_filter((argv)[1]) : (void)0,                                     \
     cmocka_run_group_tests((tests), NULL, NULL))

#endif
