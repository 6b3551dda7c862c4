/* The worker record files (tests/chaos/worker.c gives the format) as the
 * record checks read them (liveness.c, notify.c): one event a line, a
 * letter, then the owner and the time. */
#ifndef NF_RECORDS_H
#define NF_RECORDS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

/* A file being read, and its current line's fields. */
typedef struct nf_records {
    FILE *f;
    const char *kinds; /* the letters wanted */
    char kind;
    uint64_t owner;
    int64_t t;
} nf_records;

/* Opens path for the lines whose letter is one of kinds; false (said on
 * stderr) when it cannot be read. */
bool nf_records_open(nf_records *r, const char *path, const char *kinds);

/* The next such line with an owner and a time into r; false at the end.
 * A line without its newline (torn, or longer than the 511 bytes read
 * at once) is skipped. */
bool nf_records_next(nf_records *r);

void nf_records_close(nf_records *r);

#endif
