/* The watchdog's name set on its own (src/name_set.c): finds by name after
 * growing, removing during a walk (tombstones), and compacting, checked
 * against which objects are in. No Redis needed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "name_set.h"
#include "rt_main.h"

#define N 3000

typedef struct obj {
    size_t len;
    char name[24];
} obj;

static obj objs[N];

static const char *name_of(const void *o, size_t *len) {
    const obj *b = o;
    *len = b->len;
    return b->name;
}

static void make_objs(void) {
    for (size_t i = 0; i < N; i++) {
        /* Binary names too: a NUL inside, so lengths matter. */
        objs[i].len = (size_t)snprintf(objs[i].name, sizeof(objs[i].name), "lock%zu", i);
        if (i % 3 == 0) {
            objs[i].name[1] = '\0';
        }
    }
}

static void check(const rlock__name_set *s, const bool *in) {
    size_t live = 0;
    for (size_t i = 0; i < N; i++) {
        void *found = rlock__name_set_find(s, objs[i].name, objs[i].len);
        assert_ptr_equal(found, in[i] ? &objs[i] : NULL);
        live += in[i];
    }
    assert_int_equal(s->live, live);
}

static void test_find_after_growing(void **state) {
    (void)state;
    make_objs();
    static bool in[N];
    rlock__name_set s;
    rlock__name_set_init(&s, name_of);
    assert_null(rlock__name_set_find(&s, "x", 1));
    for (size_t i = 0; i < N; i++) {
        assert_true(rlock__name_set_add(&s, &objs[i]));
        in[i] = true;
    }
    check(&s, in);
    assert_true(s.live * 4 <= s.cap * 3); /* grown before full */
    rlock__name_set_free(&s);
}

/* A walk removes every other object it visits, as the watchdog's expiry
 * check does; the walk still sees each object once, and the rest stay. */
static void test_remove_during_walk_then_compact(void **state) {
    (void)state;
    make_objs();
    static bool in[N];
    rlock__name_set s;
    rlock__name_set_init(&s, name_of);
    for (size_t i = 0; i < N; i++) {
        assert_true(rlock__name_set_add(&s, &objs[i]));
        in[i] = true;
    }
    static int seen[N];
    memset(seen, 0, sizeof(seen));
    for (size_t pos = 0; pos < s.cap; pos++) {
        obj *o = rlock__name_set_at(&s, pos);
        if (o == NULL) {
            continue;
        }
        size_t i = (size_t)(o - objs);
        seen[i]++;
        if (i % 2 == 0) {
            rlock__name_set_remove(&s, o);
            in[i] = false;
        }
    }
    for (size_t i = 0; i < N; i++) {
        assert_int_equal(seen[i], 1);
    }
    check(&s, in);
    /* Most of the rest go; compacting shrinks the array and keeps them. */
    for (size_t i = 1; i < N; i += 2) {
        if (i % 40 != 1) {
            rlock__name_set_remove(&s, &objs[i]);
            in[i] = false;
        }
    }
    size_t before = s.cap;
    rlock__name_set_compact(&s);
    assert_true(s.cap < before);
    check(&s, in);
    /* Added again after compacting: found, as are the others. */
    for (size_t i = 0; i < N; i += 2) {
        assert_true(rlock__name_set_add(&s, &objs[i]));
        in[i] = true;
    }
    check(&s, in);
    rlock__name_set_free(&s);
}

int main(int argc, char **argv) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_find_after_growing),
        cmocka_unit_test(test_remove_during_walk_then_compact),
    };
    return RT_RUN_TESTS(tests, argc, argv);
}
