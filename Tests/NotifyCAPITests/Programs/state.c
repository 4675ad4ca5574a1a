/* State through notifyd: `state set NAME VALUE` and `state get NAME` (prints the value)
   run as separate processes; `state version` prints notifyd's pid and interface version
   from NOTIFYBUS_SERVER_VERSION_NAME; `state survive NAME GO` keeps a dispatch
   registration and a state across a notifyd restart (it prints "ready", waits for the
   file GO to exist, then expects a post to reach it and the state to be back). */
#include <notify.h>
#include <notify_private.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"

static atomic_int fired;

int main(int argc, char **argv) {
  if (argc < 2) return 64;
  const char *mode = argv[1];
  int token;
  if (strcmp(mode, "set") == 0 && argc == 4) {
    EXPECT_STATUS(notify_register_check(argv[2], &token), NOTIFY_STATUS_OK);
    EXPECT_STATUS(notify_set_state(token, strtoull(argv[3], NULL, 10)), NOTIFY_STATUS_OK);
    EXPECT_STATUS(notify_cancel(token), NOTIFY_STATUS_OK);
    return harness_finish("state set");
  }
  if (strcmp(mode, "get") == 0 && argc == 3) {
    uint64_t value = 0;
    EXPECT_STATUS(notify_register_plain(argv[2], &token), NOTIFY_STATUS_OK);
    EXPECT_STATUS(notify_get_state(token, &value), NOTIFY_STATUS_OK);
    printf("%llu\n", (unsigned long long)value);
    return harness_finish("state get");
  }
  if (strcmp(mode, "version") == 0) {
    uint64_t value = 0;
    EXPECT_STATUS(notify_register_check(NOTIFYBUS_SERVER_VERSION_NAME, &token), NOTIFY_STATUS_OK);
    EXPECT_STATUS(notify_get_state(token, &value), NOTIFY_STATUS_OK);
    /* Only notifyd sets it; the refusal is silent, as every state refusal on Darwin. */
    EXPECT_STATUS(notify_set_state(token, 5), NOTIFY_STATUS_OK);
    uint64_t again = 0;
    EXPECT_STATUS(notify_get_state(token, &again), NOTIFY_STATUS_OK);
    EXPECT(again == value, "the version name changed to %llu", (unsigned long long)again);
    printf("pid %llu version %llu\n", (unsigned long long)(value >> 32),
           (unsigned long long)(value & 0xffffffffu));
    return harness_finish("state version");
  }
  if (strcmp(mode, "survive") == 0 && argc == 4) {
    dispatch_queue_t queue = dispatch_queue_create("survive", DISPATCH_QUEUE_SERIAL);
    EXPECT_STATUS(notify_register_dispatch(argv[2], &token, queue, ^(int t) {
                    (void)t;
                    atomic_fetch_add(&fired, 1);
                  }),
                  NOTIFY_STATUS_OK);
    EXPECT_STATUS(notify_set_state(token, 4242), NOTIFY_STATUS_OK);
    printf("ready\n");
    fflush(stdout);
    if (!harness_wait_for_file(argv[3])) return 1;
    int before = atomic_load(&fired);
    EXPECT_STATUS(notify_post(argv[2]), NOTIFY_STATUS_OK);
    EXPECT(harness_wait_count(&fired, before + 1, 5000) > before, "no delivery after the restart");
    uint64_t value = 0;
    long long deadline = harness_now_ms() + 5000;
    while (harness_now_ms() < deadline) {
      EXPECT_STATUS(notify_get_state(token, &value), NOTIFY_STATUS_OK);
      if (value == 4242) break;
      harness_sleep_ms(20);
    }
    EXPECT(value == 4242, "state after the restart is %llu", (unsigned long long)value);
    return harness_finish("state survive");
  }
  return 64;
}
