/* libnotify.md §4 notify_disable_test and the private interface: state survives
   NOTIFY_OPT_DISABLE / NOTIFY_OPT_ENABLE, calls in between return
   NOTIFY_STATUS_OPT_DISABLE; notify_peek counts posts on check tokens and refuses plain
   ones; notify_dump_status writes a report; a cancel refused while disabled changes
   nothing. argv[1]: where to write the report. */
#include <fcntl.h>
#include <notify.h>
#include <notify_private.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"

int main(int argc, char **argv) {
  if (argc != 2) return 64;
  char name[128];
  snprintf(name, sizeof name, "org.notifybus.test.options.%d", getpid());
  int fd_token, fd = -1, check_token, plain_token, token;
  uint64_t state = 0;
  EXPECT_STATUS(notify_register_file_descriptor(name, &fd, 0, &fd_token), NOTIFY_STATUS_OK);
  EXPECT_STATUS(notify_set_state(fd_token, 123454321), NOTIFY_STATUS_OK);
  EXPECT_STATUS(notify_get_state(fd_token, &state), NOTIFY_STATUS_OK);
  EXPECT(state == 123454321, "state %llu", (unsigned long long)state);

  notify_set_options(NOTIFY_OPT_DISABLE);
  EXPECT_STATUS(notify_register_check(name, &token), NOTIFY_STATUS_OPT_DISABLE);
  EXPECT_STATUS(notify_get_state(fd_token, &state), NOTIFY_STATUS_OPT_DISABLE);
  EXPECT_STATUS(notify_post(name), NOTIFY_STATUS_OPT_DISABLE);
  notify_set_options(NOTIFY_OPT_DISPATCH); /* ignored while disabled */
  EXPECT_STATUS(notify_post(name), NOTIFY_STATUS_OPT_DISABLE);
  notify_set_options(NOTIFY_OPT_ENABLE);
  state = 0;
  EXPECT_STATUS(notify_get_state(fd_token, &state), NOTIFY_STATUS_OK);
  EXPECT(state == 123454321, "state after enabling %llu", (unsigned long long)state);
  EXPECT(notify_is_valid_token(fd_token), "token invalid after enabling");

  uint32_t counter = 0;
  EXPECT_STATUS(notify_register_check(name, &check_token), NOTIFY_STATUS_OK);
  EXPECT_STATUS(notify_register_plain(name, &plain_token), NOTIFY_STATUS_OK);
  EXPECT_STATUS(notify_peek(check_token, &counter), NOTIFY_STATUS_OK);
  EXPECT(counter == 1, "peek before a post %u", counter);
  EXPECT_STATUS(notify_peek(plain_token, &counter), NOTIFY_STATUS_INVALID_REQUEST);
  EXPECT_STATUS(notify_peek(fd_token, &counter), NOTIFY_STATUS_INVALID_REQUEST);
  EXPECT_STATUS(notify_post(name), NOTIFY_STATUS_OK);
  EXPECT_STATUS(notify_simple_post(name), NOTIFY_STATUS_OK);
  long long deadline = harness_now_ms() + 5000;
  do {
    harness_sleep_ms(5);
    EXPECT_STATUS(notify_peek(check_token, &counter), NOTIFY_STATUS_OK);
  } while (counter < 3 && harness_now_ms() < deadline);
  EXPECT(counter == 3, "peek after two posts %u", counter);
  int check = 0;
  EXPECT_STATUS(notify_check(plain_token, &check), NOTIFY_STATUS_OK);
  EXPECT(check == 1, "plain check %d", check);

  EXPECT_STATUS(notify_dump_status(argv[1]), NOTIFY_STATUS_OK);
  char report[8192] = {0};
  int report_fd = open(argv[1], O_RDONLY);
  EXPECT(report_fd >= 0, "no report at %s", argv[1]);
  if (report_fd >= 0) {
    EXPECT(read(report_fd, report, sizeof report - 1) > 0, "empty report");
    close(report_fd);
  }
  char expected[256];
  snprintf(expected, sizeof expected, "token %d check %s posts 2", check_token, name);
  EXPECT(strstr(report, expected) != NULL, "the report lacks '%s':\n%s", expected, report);
  EXPECT(strstr(report, "notifyd: pid ") != NULL, "the report lacks notifyd:\n%s", report);

  /* A cancel refused while disabled leaves a dispatch registration delivering. */
  static atomic_int fired;
  dispatch_queue_t queue = dispatch_queue_create("options", DISPATCH_QUEUE_SERIAL);
  int dispatch_token;
  EXPECT_STATUS(notify_register_dispatch(name, &dispatch_token, queue, ^(int t) {
                  (void)t;
                  atomic_fetch_add(&fired, 1);
                }),
                NOTIFY_STATUS_OK);
  notify_set_options(NOTIFY_OPT_DISABLE);
  EXPECT_STATUS(notify_cancel(dispatch_token), NOTIFY_STATUS_OPT_DISABLE);
  notify_set_options(NOTIFY_OPT_ENABLE);
  EXPECT_STATUS(notify_post(name), NOTIFY_STATUS_OK);
  EXPECT(harness_wait_count(&fired, 1, 5000) >= 1,
         "the dispatch registration stopped delivering after a refused cancel");
  EXPECT_STATUS(notify_cancel(dispatch_token), NOTIFY_STATUS_OK);
  dispatch_release(queue);

  EXPECT_STATUS(notify_cancel(fd_token), NOTIFY_STATUS_OK);
  EXPECT(!notify_is_valid_token(fd_token), "token valid after cancel");
  return harness_finish("options_peek");
}
