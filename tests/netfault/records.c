/* See records.h. */
#include "records.h"

#include <string.h>

bool nf_records_open(nf_records *r, const char *path, const char *kinds) {
    r->f = fopen(path, "re"); /* the driver forks workers: not theirs */
    r->kinds = kinds;
    if (r->f == NULL) {
        fprintf(stderr, "netfault: cannot read %s\n", path);
    }
    return r->f != NULL;
}

bool nf_records_next(nf_records *r) {
    char line[512];
    while (fgets(line, sizeof(line), r->f) != NULL) {
        unsigned long long o;
        long long t;
        char k = line[0];
        if (k != '\0' && strchr(r->kinds, k) != NULL && strchr(line, '\n') != NULL &&
            sscanf(line + 1, "%llu %lld", &o, &t) == 2) {
            r->kind = k;
            r->owner = o;
            r->t = t;
            return true;
        }
    }
    return false;
}

void nf_records_close(nf_records *r) {
    fclose(r->f);
    r->f = NULL;
}
