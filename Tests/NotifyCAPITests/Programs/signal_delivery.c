/* libnotify.md §4 notify_register_signal_1/_2: a post sends the signal and makes check
   true; a raw kill of the same signal does not count. Builds with plain gcc. */
#include <notify.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"

static atomic_int signals;

static void on_signal(int number) {
  (void)number;
  atomic_fetch_add(&signals, 1);
}

int main(void) {
  char name[128];
  snprintf(name, sizeof name, "org.notifybus.test.signal.%d", getpid());
  struct sigaction action;
  memset(&action, 0, sizeof action);
  action.sa_handler = on_signal;
  sigaction(SIGUSR1, &action, NULL);
  int token;
  EXPECT_STATUS(notify_register_signal(name, SIGUSR1, &token), NOTIFY_STATUS_OK);
  int check = 0;
  EXPECT_STATUS(notify_check(token, &check), NOTIFY_STATUS_OK);
  EXPECT(check == 1, "first check %d", check);
  kill(getpid(), SIGUSR1);
  EXPECT(harness_wait_count(&signals, 1, 2000) == 1, "the raw signal did not arrive");
  EXPECT_STATUS(notify_check(token, &check), NOTIFY_STATUS_OK);
  EXPECT(check == 0, "a raw kill counted as a notification");
  EXPECT_STATUS(notify_post(name), NOTIFY_STATUS_OK);
  EXPECT(harness_wait_count(&signals, 2, 5000) == 2, "the post sent no signal");
  EXPECT_STATUS(notify_check(token, &check), NOTIFY_STATUS_OK);
  EXPECT(check == 1, "check after the post %d", check);
  int bad;
  EXPECT_STATUS(notify_register_signal(name, 0, &bad), NOTIFY_STATUS_INVALID_SIGNAL);
  EXPECT_STATUS(notify_register_signal(name, 999, &bad), NOTIFY_STATUS_INVALID_SIGNAL);
  EXPECT_STATUS(notify_cancel(token), NOTIFY_STATUS_OK);
  return harness_finish("signal_delivery");
}
