/* libnotify.md §4 notify_test_helper: the first check is true, then false until a post;
   a new dispatch registration does not fire by itself; one post makes check true and runs
   the handler. */
#include <notify.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"

static atomic_int fired;
static int dispatch_token = NOTIFY_TOKEN_INVALID;

int main(void) {
  char name[128];
  snprintf(name, sizeof name, "org.notifybus.test.check.%d", getpid());
  int check_token = NOTIFY_TOKEN_INVALID;
  EXPECT_STATUS(notify_register_check(name, &check_token), NOTIFY_STATUS_OK);
  EXPECT(check_token > 0, "token %d", check_token);
  int check = -1;
  EXPECT_STATUS(notify_check(check_token, &check), NOTIFY_STATUS_OK);
  EXPECT(check == 1, "first check %d, expected 1", check);
  EXPECT_STATUS(notify_check(check_token, &check), NOTIFY_STATUS_OK);
  EXPECT(check == 0, "second check %d, expected 0", check);

  dispatch_queue_t queue = dispatch_queue_create("test", DISPATCH_QUEUE_SERIAL);
  EXPECT_STATUS(notify_register_dispatch(name, &dispatch_token, queue, ^(int token) {
                  EXPECT(token == dispatch_token, "handler got token %d", token);
                  atomic_fetch_add(&fired, 1);
                }),
                NOTIFY_STATUS_OK);
  EXPECT(notify_is_valid_token(dispatch_token), "dispatch token is valid");
  harness_sleep_ms(300);
  EXPECT(atomic_load(&fired) == 0, "a handler ran without a post");
  EXPECT_STATUS(notify_check(check_token, &check), NOTIFY_STATUS_OK);
  EXPECT(check == 0, "check %d before any post", check);

  EXPECT_STATUS(notify_post(name), NOTIFY_STATUS_OK);
  EXPECT(harness_wait_count(&fired, 1, 5000) == 1, "the handler did not run once");
  long long deadline = harness_now_ms() + 5000;
  do {
    EXPECT_STATUS(notify_check(check_token, &check), NOTIFY_STATUS_OK);
  } while (check == 0 && harness_now_ms() < deadline && (harness_sleep_ms(2), 1));
  EXPECT(check == 1, "check after the post is %d", check);
  EXPECT_STATUS(notify_check(check_token, &check), NOTIFY_STATUS_OK);
  EXPECT(check == 0, "check after reading the post is %d", check);

  EXPECT_STATUS(notify_cancel(check_token), NOTIFY_STATUS_OK);
  EXPECT_STATUS(notify_cancel(dispatch_token), NOTIFY_STATUS_OK);
  EXPECT(!notify_is_valid_token(dispatch_token), "cancelled token still valid");
  EXPECT_STATUS(notify_check(check_token, &check), NOTIFY_STATUS_INVALID_TOKEN);
  dispatch_release(queue);
  return harness_finish("check_and_dispatch");
}
