/* Helpers shared by the C test programs of NotifyCAPITests. Each program exits 0 when
   every expectation holds; otherwise it prints "FAIL: ..." lines and exits 1. */
#ifndef NOTIFYBUS_TEST_HARNESS_H
#define NOTIFYBUS_TEST_HARNESS_H

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

/* Atomic: several threads of one program may fail at once. */
static atomic_int harness_failures;

#define EXPECT(condition, ...)                                   \
  do {                                                           \
    if (!(condition)) {                                          \
      fprintf(stderr, "FAIL (%s:%d): ", __FILE__, __LINE__);     \
      fprintf(stderr, __VA_ARGS__);                              \
      fprintf(stderr, "\n");                                     \
      harness_failures++;                                        \
    }                                                            \
  } while (0)

#define EXPECT_STATUS(call, expected)                                                    \
  do {                                                                                   \
    uint32_t harness_status = (call);                                                    \
    EXPECT(harness_status == (uint32_t)(expected), "%s returned %u, expected %u", #call, \
           harness_status, (unsigned)(expected));                                        \
  } while (0)

static inline long long harness_now_ms(void) {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return (long long)now.tv_sec * 1000 + now.tv_nsec / 1000000;
}

static inline void harness_sleep_ms(int milliseconds) {
  struct timespec pause = {milliseconds / 1000, (long)(milliseconds % 1000) * 1000000L};
  nanosleep(&pause, NULL);
}

/* Waits up to `limit_ms` for *counter to reach `target`; returns its value. */
static inline int harness_wait_count(atomic_int *counter, int target, int limit_ms) {
  long long deadline = harness_now_ms() + limit_ms;
  while (atomic_load(counter) < target && harness_now_ms() < deadline) harness_sleep_ms(2);
  return atomic_load(counter);
}

/* Waits up to 60 s for `path` to exist; returns whether it does. */
static inline int harness_wait_for_file(const char *path) {
  long long deadline = harness_now_ms() + 60000;
  while (access(path, F_OK) != 0) {
    if (harness_now_ms() > deadline) return 0;
    harness_sleep_ms(10);
  }
  return 1;
}

static inline int harness_finish(const char *program) {
  if (harness_failures == 0) {
    printf("%s: ok\n", program);
    return 0;
  }
  fprintf(stderr, "%s: %d failure(s)\n", program, harness_failures);
  return 1;
}

#endif
