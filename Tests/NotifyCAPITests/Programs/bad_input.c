/* Bad input never crashes and returns Darwin's status: NULL or over-long names give
   NOTIFY_STATUS_INVALID_NAME, NULL out-pointers NOTIFY_STATUS_NULL_INPUT (Darwin's legacy
   codes for NULL descriptor and port pointers), unknown tokens NOTIFY_STATUS_INVALID_TOKEN,
   Mach ports NOTIFY_STATUS_INVALID_PORT. Builds with plain gcc. */
#include <notify.h>
#include <notify_private.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"

int main(void) {
  char longest[512], too_long[600], name[128];
  memset(longest, 'a', 511);
  longest[511] = '\0';
  memset(too_long, 'b', 599);
  too_long[599] = '\0';
  snprintf(name, sizeof name, "org.notifybus.test.bad.%d", getpid());
  int token = 12345, check = 7, fd = -1;
  uint64_t state = 0;
  uint32_t value = 0;
  mach_port_t port = 99;

  EXPECT_STATUS(notify_post(NULL), NOTIFY_STATUS_INVALID_NAME);
  EXPECT_STATUS(notify_post(""), NOTIFY_STATUS_INVALID_NAME);
  EXPECT_STATUS(notify_post(too_long), NOTIFY_STATUS_INVALID_NAME);
  EXPECT_STATUS(notify_post("\xff\xfe not UTF-8"), NOTIFY_STATUS_INVALID_NAME);
  EXPECT_STATUS(notify_post(longest), NOTIFY_STATUS_OK);
  EXPECT_STATUS(notify_register_check(NULL, &token), NOTIFY_STATUS_INVALID_NAME);
  EXPECT(token == NOTIFY_TOKEN_INVALID, "token %d after a refused registration", token);
  EXPECT_STATUS(notify_register_check(too_long, &token), NOTIFY_STATUS_INVALID_NAME);
  EXPECT_STATUS(notify_register_check(name, NULL), NOTIFY_STATUS_NULL_INPUT);
  EXPECT_STATUS(notify_register_plain(NULL, &token), NOTIFY_STATUS_INVALID_NAME);
  EXPECT_STATUS(notify_register_signal(NULL, 1, &token), NOTIFY_STATUS_INVALID_NAME);
  EXPECT_STATUS(notify_register_signal(name, 1, NULL), NOTIFY_STATUS_NULL_INPUT);
  EXPECT_STATUS(notify_register_file_descriptor(NULL, &fd, 0, &token), NOTIFY_STATUS_INVALID_NAME);
  EXPECT_STATUS(notify_register_file_descriptor(name, &fd, 0, NULL), NOTIFY_STATUS_NULL_INPUT);
  EXPECT_STATUS(notify_register_mach_port(name, &port, 0, &token), NOTIFY_STATUS_INVALID_PORT);
  EXPECT(port == MACH_PORT_NULL, "port %u", port);
  EXPECT_STATUS(notify_register_mach_port(name, NULL, 0, &token), NOTIFY_STATUS_INVALID_PORT);
  EXPECT_STATUS(notify_register_mach_port(NULL, &port, 0, &token), NOTIFY_STATUS_INVALID_NAME);

  /* Tokens that were never handed out. */
  int unknown[] = {NOTIFY_TOKEN_INVALID, 0, 1, 999999, 0x7fffffff};
  for (size_t i = 0; i < sizeof unknown / sizeof unknown[0]; i++) {
    int t = unknown[i];
    EXPECT(!notify_is_valid_token(t), "token %d valid", t);
    EXPECT_STATUS(notify_check(t, &check), NOTIFY_STATUS_INVALID_TOKEN);
    EXPECT_STATUS(notify_cancel(t), NOTIFY_STATUS_INVALID_TOKEN);
    EXPECT_STATUS(notify_suspend(t), NOTIFY_STATUS_INVALID_TOKEN);
    EXPECT_STATUS(notify_resume(t), NOTIFY_STATUS_INVALID_TOKEN);
    EXPECT_STATUS(notify_get_state(t, &state), NOTIFY_STATUS_INVALID_TOKEN);
    EXPECT_STATUS(notify_set_state(t, 1), NOTIFY_STATUS_INVALID_TOKEN);
    EXPECT_STATUS(notify_peek(t, &value), NOTIFY_STATUS_INVALID_TOKEN);
    EXPECT_STATUS(notify_monitor_file(t, "/tmp/x", 0), NOTIFY_STATUS_INVALID_TOKEN);
  }

  /* NULL out-pointers on a live token. */
  EXPECT_STATUS(notify_register_check(name, &token), NOTIFY_STATUS_OK);
  EXPECT_STATUS(notify_check(token, NULL), NOTIFY_STATUS_NULL_INPUT);
  EXPECT_STATUS(notify_get_state(token, NULL), NOTIFY_STATUS_NULL_INPUT);
  EXPECT_STATUS(notify_peek(token, NULL), NOTIFY_STATUS_NULL_INPUT);
  EXPECT_STATUS(notify_monitor_file(token, NULL, 0), NOTIFY_STATUS_INVALID_REQUEST);
  EXPECT_STATUS(notify_dump_status(NULL), NOTIFY_STATUS_NULL_INPUT);
  EXPECT_STATUS(notify_cancel(token), NOTIFY_STATUS_OK);
  EXPECT_STATUS(notify_cancel(token), NOTIFY_STATUS_INVALID_TOKEN);
  return harness_finish("bad_input");
}
