/* libnotify.md §4 notify_suspend: with A suspended a post reaches only B; resuming A
   delivers one deferred notification to A and none to B; a later post reaches both. */
#include <notify.h>
#include <unistd.h>

#include "harness.h"

static atomic_int a_runs, b_runs;

int main(void) {
  char name[128];
  snprintf(name, sizeof name, "org.notifybus.test.suspend.%d", getpid());
  dispatch_queue_t queue = dispatch_queue_create("suspend", DISPATCH_QUEUE_SERIAL);
  int a, b;
  EXPECT_STATUS(notify_register_dispatch(name, &a, queue, ^(int t) { (void)t; atomic_fetch_add(&a_runs, 1); }),
                NOTIFY_STATUS_OK);
  EXPECT_STATUS(notify_register_dispatch(name, &b, queue, ^(int t) { (void)t; atomic_fetch_add(&b_runs, 1); }),
                NOTIFY_STATUS_OK);
  EXPECT_STATUS(notify_suspend(a), NOTIFY_STATUS_OK);
  for (int i = 0; i < 3; i++) EXPECT_STATUS(notify_post(name), NOTIFY_STATUS_OK);
  EXPECT(harness_wait_count(&b_runs, 1, 5000) >= 1, "B did not run");
  harness_sleep_ms(300);
  EXPECT(atomic_load(&a_runs) == 0, "suspended A ran %d times", atomic_load(&a_runs));
  int b_before = atomic_load(&b_runs);
  EXPECT_STATUS(notify_resume(a), NOTIFY_STATUS_OK);
  EXPECT(harness_wait_count(&a_runs, 1, 5000) == 1, "A did not run once on resume");
  harness_sleep_ms(300);
  EXPECT(atomic_load(&a_runs) == 1, "A ran %d times on resume", atomic_load(&a_runs));
  EXPECT(atomic_load(&b_runs) == b_before, "B ran on A's resume");
  EXPECT_STATUS(notify_post(name), NOTIFY_STATUS_OK);
  EXPECT(harness_wait_count(&a_runs, 2, 5000) == 2, "A missed the post after resume");
  EXPECT(harness_wait_count(&b_runs, b_before + 1, 5000) == b_before + 1, "B missed it");
  EXPECT_STATUS(notify_suspend(NOTIFY_TOKEN_INVALID), NOTIFY_STATUS_INVALID_TOKEN);
  EXPECT_STATUS(notify_resume(123456789), NOTIFY_STATUS_INVALID_TOKEN);
  notify_cancel(a);
  notify_cancel(b);
  dispatch_release(queue);
  return harness_finish("suspend_resume");
}
