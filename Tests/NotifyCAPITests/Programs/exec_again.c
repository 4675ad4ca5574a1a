/* libnotify.md §4 notify_exec: registrations work, then the program execs itself, and
   in the new image (same pid, fresh library) registrations work again. Exits 42. */
#include <notify.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"

static atomic_int fired;

static void exercise(const char *stage) {
  char name[128];
  snprintf(name, sizeof name, "org.notifybus.test.exec.%d.%s", getpid(), stage);
  int check_token, dispatch_token, check = 0;
  dispatch_queue_t queue = dispatch_queue_create("exec", DISPATCH_QUEUE_SERIAL);
  EXPECT_STATUS(notify_register_check(name, &check_token), NOTIFY_STATUS_OK);
  EXPECT_STATUS(notify_check(check_token, &check), NOTIFY_STATUS_OK);
  EXPECT(check == 1, "%s: first check %d", stage, check);
  EXPECT_STATUS(notify_register_dispatch(name, &dispatch_token, queue, ^(int t) {
                  (void)t;
                  atomic_fetch_add(&fired, 1);
                }),
                NOTIFY_STATUS_OK);
  EXPECT_STATUS(notify_post(name), NOTIFY_STATUS_OK);
  EXPECT(harness_wait_count(&fired, 1, 5000) == 1, "%s: the handler did not run", stage);
}

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "again") == 0) {
    exercise("after-exec");
    return harness_failures == 0 ? 42 : 1;
  }
  exercise("before-exec");
  if (harness_failures) return 1;
  fflush(stdout);
  execl("/proc/self/exe", argv[0], "again", (char *)NULL);
  perror("execl");
  return 1;
}
