/* unit_check.h -- the checks of a stand-alone C unit test: CHECK(cond)
 * counts a pass, or prints the failed condition and its line and counts a
 * failure; check_report() prints "N passed, M failed", the line the pytest
 * drivers read, and gives main's exit status.  Included once by a test
 * program: the counters are that program's own. */
#ifndef UNIT_CHECK_H
#define UNIT_CHECK_H

#include <stdio.h>

static int check_passed, check_failed;

#define CHECK(cond)                                                               \
    do {                                                                          \
        if (cond) {                                                               \
            check_passed++;                                                       \
        } else {                                                                  \
            printf("FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond);                \
            check_failed++;                                                       \
        }                                                                         \
    } while (0)

static inline int check_report(void)
{
    printf("%d passed, %d failed\n", check_passed, check_failed);
    return check_failed != 0;
}

#endif /* UNIT_CHECK_H */
