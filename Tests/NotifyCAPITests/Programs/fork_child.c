/* After fork() the child's tokens are disabled and its calls return
   NOTIFY_STATUS_OPT_DISABLE, as on Darwin; the parent keeps working. */
#include <notify.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

static atomic_int fired;

int main(void) {
  char name[128];
  snprintf(name, sizeof name, "org.notifybus.test.fork.%d", getpid());
  dispatch_queue_t queue = dispatch_queue_create("fork", DISPATCH_QUEUE_SERIAL);
  int check_token, dispatch_token;
  EXPECT_STATUS(notify_register_check(name, &check_token), NOTIFY_STATUS_OK);
  EXPECT_STATUS(notify_register_dispatch(name, &dispatch_token, queue, ^(int t) {
                  (void)t;
                  atomic_fetch_add(&fired, 1);
                }),
                NOTIFY_STATUS_OK);
  EXPECT_STATUS(notify_post(name), NOTIFY_STATUS_OK);
  EXPECT(harness_wait_count(&fired, 1, 5000) == 1, "the parent's handler did not run");
  fflush(stdout);
  fflush(stderr);

  pid_t child = fork();
  if (child == 0) {
    int check = 0, token = 0;
    uint64_t state;
    EXPECT_STATUS(notify_post(name), NOTIFY_STATUS_OPT_DISABLE);
    EXPECT_STATUS(notify_check(check_token, &check), NOTIFY_STATUS_OPT_DISABLE);
    EXPECT_STATUS(notify_register_check(name, &token), NOTIFY_STATUS_OPT_DISABLE);
    EXPECT_STATUS(notify_get_state(check_token, &state), NOTIFY_STATUS_OPT_DISABLE);
    EXPECT_STATUS(notify_cancel(dispatch_token), NOTIFY_STATUS_OPT_DISABLE);
    EXPECT(!notify_is_valid_token(check_token), "an inherited token is valid in the child");
    _exit(harness_failures == 0 ? 0 : 1);
  }
  int status = 0;
  waitpid(child, &status, 0);
  EXPECT(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the child failed (status %d)", status);

  /* The parent's connection and registrations are untouched. */
  EXPECT(notify_is_valid_token(check_token), "the parent's token is no longer valid");
  EXPECT_STATUS(notify_post(name), NOTIFY_STATUS_OK);
  EXPECT(harness_wait_count(&fired, 2, 5000) == 2, "the parent's handler missed a post after fork");
  int check = 0;
  EXPECT_STATUS(notify_check(check_token, &check), NOTIFY_STATUS_OK);
  EXPECT(check == 1, "check %d", check);
  EXPECT_STATUS(notify_cancel(check_token), NOTIFY_STATUS_OK);
  EXPECT_STATUS(notify_cancel(dispatch_token), NOTIFY_STATUS_OK);
  return harness_finish("fork_child");
}
