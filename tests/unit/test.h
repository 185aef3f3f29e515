/* test.h - the unit tests' few checks. A failed check prints file:line and
 * what it compared, then lets the test carry on, so one run shows every
 * failure; main.c counts a test function as failed if any check in it failed.
 * Test functions are 'void test_<name>(void)', listed once in main.c. */
#ifndef SHORTD_TEST_H
#define SHORTD_TEST_H

#include <stdbool.h>

extern int test_checks_passed; /* over the whole run */
extern int test_checks_failed; /* over the whole run */

bool test_check(bool ok, const char *file, int line, const char *expr);
bool test_check_int(long long a, long long b, const char *file, int line, const char *ea,
                    const char *eb);
bool test_check_str(const char *a, const char *b, const char *file, int line, const char *ea,
                    const char *eb);

/* Each evaluates its arguments once and yields true when the check passed. */
#define CHECK(cond) test_check((cond), __FILE__, __LINE__, #cond)
#define CHECK_EQ_INT(a, b)                                                                         \
    test_check_int((long long)(a), (long long)(b), __FILE__, __LINE__, #a, #b)
#define CHECK_EQ_STR(a, b) test_check_str((a), (b), __FILE__, __LINE__, #a, #b)

/* Context for the failure just reported, e.g. which row of a table it was. */
void test_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* How many of this process's threads are named 'name' (/proc/self/task);
 * the id of the last one found goes to *tid when tid is not NULL. */
int test_threads_named(const char *name, long *tid);

#endif
