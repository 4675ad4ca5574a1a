/* With no bus at NOTIFYBUS_BUS_ADDRESS calls return NOTIFY_STATUS_SERVER_NOT_FOUND and the
   process goes on; once a bus answers (the test starts one when this prints "waiting",
   then creates the file argv[1]) the next calls work. Builds with plain gcc. */
#include <notify.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"

int main(int argc, char **argv) {
  if (argc != 2) return 64;
  char name[128];
  snprintf(name, sizeof name, "org.notifybus.test.dead.%d", getpid());
  int token = 0;
  EXPECT_STATUS(notify_post(name), NOTIFY_STATUS_SERVER_NOT_FOUND);
  EXPECT_STATUS(notify_register_check(name, &token), NOTIFY_STATUS_SERVER_NOT_FOUND);
  EXPECT(token == NOTIFY_TOKEN_INVALID, "token %d", token);
  EXPECT(!notify_is_valid_token(token), "valid token without a bus");
  printf("waiting\n");
  fflush(stdout);
  if (!harness_wait_for_file(argv[1])) return 1;
  EXPECT_STATUS(notify_register_check(name, &token), NOTIFY_STATUS_OK);
  /* The first check is true (Darwin's rule); take it before posting, or a post that
     arrives first would be coalesced into it and the loop below would wait in vain. */
  int check = 0;
  EXPECT_STATUS(notify_check(token, &check), NOTIFY_STATUS_OK);
  EXPECT(check == 1, "the first check after registering is %d", check);
  EXPECT_STATUS(notify_post(name), NOTIFY_STATUS_OK);
  long long deadline = harness_now_ms() + 5000;
  do {
    harness_sleep_ms(5);
    EXPECT_STATUS(notify_check(token, &check), NOTIFY_STATUS_OK);
  } while (check == 0 && harness_now_ms() < deadline);
  EXPECT(check == 1, "the post did not arrive once the bus answered");
  return harness_finish("dead_bus");
}
