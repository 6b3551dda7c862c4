/* The live-object registry on its own: an open hash set of addresses, so
 * its deletion (which moves later keys back) and its growing and
 * shrinking are checked against a plain model. No Redis needed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "registry.h"
#include "rt_main.h"

#define N 5000

/* Addresses that are never dereferenced: 16-byte steps, as allocations. */
static const void *addr(size_t i) {
    return (const void *)(uintptr_t)(0x100000 + i * 16);
}

/* Added, removed in a shuffled order, and checked after every step
 * against which are still in: no key is lost behind a moved one. */
static void test_add_remove_against_model(void **state) {
    (void)state;
    static bool in[N];
    static size_t order[N];
    for (size_t i = 0; i < N; i++) {
        assert_true(rlock__registry_add(addr(i), RLOCK__KIND_LOCK));
        in[i] = true;
        order[i] = i;
    }
    srand(7);
    for (size_t i = N - 1; i > 0; i--) {
        size_t j = (size_t)rand() % (i + 1);
        size_t t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
    for (size_t k = 0; k < N; k++) {
        size_t i = order[k];
        assert_true(rlock__registry_remove(addr(i), RLOCK__KIND_LOCK));
        in[i] = false;
        assert_false(rlock__registry_remove(addr(i), RLOCK__KIND_LOCK)); /* twice: refused */
        if (k % 97 == 0 || N - k < 200) { /* the whole set now and then, and while it shrinks */
            for (size_t m = 0; m < N; m++) {
                assert_int_equal(rlock__registry_has(addr(m), RLOCK__KIND_LOCK), in[m]);
            }
        }
    }
}

/* An address is live as the kind it was added as, not as the other. */
static void test_kind_is_part_of_the_key(void **state) {
    (void)state;
    const void *p = addr(N + 1);
    assert_true(rlock__registry_add(p, RLOCK__KIND_CLIENT));
    assert_true(rlock__registry_has(p, RLOCK__KIND_CLIENT));
    assert_false(rlock__registry_has(p, RLOCK__KIND_LOCK));
    assert_false(rlock__registry_remove(p, RLOCK__KIND_LOCK));
    assert_true(rlock__registry_remove(p, RLOCK__KIND_CLIENT));
    assert_false(rlock__registry_has(p, RLOCK__KIND_CLIENT));
}

int main(int argc, char **argv) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_add_remove_against_model),
        cmocka_unit_test(test_kind_is_part_of_the_key),
    };
    return RT_RUN_TESTS(tests, argc, argv);
}
