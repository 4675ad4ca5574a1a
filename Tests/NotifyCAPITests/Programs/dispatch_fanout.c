/* libnotify.md §4 dispatch_cancel_in_block: one post runs each of 10 dispatch handlers
   exactly once, and a handler may cancel its own token. Then: a handler never starts after
   notify_cancel of its token has returned, even when posts are still arriving for it. */
#include <notify.h>
#include <unistd.h>

#include "harness.h"

#define COUNT 10

static atomic_int runs[COUNT];
static atomic_int total;
static int tokens[COUNT];

int main(void) {
  char name[128];
  snprintf(name, sizeof name, "org.notifybus.test.fanout.%d", getpid());
  dispatch_queue_t queue = dispatch_queue_create("fanout", DISPATCH_QUEUE_CONCURRENT);
  for (int i = 0; i < COUNT; i++) {
    int index = i;
    EXPECT_STATUS(notify_register_dispatch(name, &tokens[i], queue, ^(int token) {
                    EXPECT(token == tokens[index], "handler %d got token %d", index, token);
                    atomic_fetch_add(&runs[index], 1);
                    EXPECT_STATUS(notify_cancel(token), NOTIFY_STATUS_OK);
                    EXPECT(!notify_is_valid_token(token), "token %d valid after cancel", token);
                    atomic_fetch_add(&total, 1);
                  }),
                  NOTIFY_STATUS_OK);
    EXPECT(tokens[i] > 0, "token %d", tokens[i]);
  }
  EXPECT_STATUS(notify_post(name), NOTIFY_STATUS_OK);
  EXPECT(harness_wait_count(&total, COUNT, 10000) == COUNT, "%d handlers ran", atomic_load(&total));
  EXPECT_STATUS(notify_post(name), NOTIFY_STATUS_OK);
  harness_sleep_ms(300);
  for (int i = 0; i < COUNT; i++)
    EXPECT(atomic_load(&runs[i]) == 1, "handler %d ran %d times", i, atomic_load(&runs[i]));

  /* A handler never starts after notify_cancel has returned: with the queue suspended,
     posts queue handler runs (or are still in flight) when the token is cancelled; once the
     queue resumes, none of them may run. */
  static atomic_int late;
  dispatch_queue_t held = dispatch_queue_create("cancel", DISPATCH_QUEUE_SERIAL);
  for (int round = 0; round < 50; round++) {
    /* A name per round: a late post of an earlier round may not reach this token. */
    char round_name[160];
    snprintf(round_name, sizeof round_name, "%s.round%d", name, round);
    int token;
    EXPECT_STATUS(notify_register_dispatch(round_name, &token, held, ^(int t) {
                    (void)t;
                    atomic_fetch_add(&late, 1);
                  }),
                  NOTIFY_STATUS_OK);
    dispatch_suspend(held);
    for (int i = 0; i < 5; i++) notify_post(round_name);
    harness_sleep_ms(round % 5);
    EXPECT_STATUS(notify_cancel(token), NOTIFY_STATUS_OK);
    dispatch_resume(held);
  }
  harness_sleep_ms(300);
  dispatch_sync(held, ^{});
  EXPECT(atomic_load(&late) == 0, "%d handlers ran after notify_cancel returned", atomic_load(&late));
  dispatch_release(held);

  /* Bad input of notify_register_dispatch. */
  int token = 0;
  EXPECT_STATUS(notify_register_dispatch(name, &token, NULL, ^(int t) { (void)t; }),
                NOTIFY_STATUS_NULL_INPUT);
  EXPECT(token == NOTIFY_TOKEN_INVALID, "token %d after a failed registration", token);
  EXPECT_STATUS(notify_register_dispatch(name, &token, queue, NULL), NOTIFY_STATUS_NULL_INPUT);
  EXPECT_STATUS(notify_register_dispatch(name, NULL, queue, ^(int t) { (void)t; }),
                NOTIFY_STATUS_NULL_INPUT);
  EXPECT_STATUS(notify_register_dispatch(NULL, &token, queue, ^(int t) { (void)t; }),
                NOTIFY_STATUS_INVALID_NAME);
  dispatch_release(queue);
  return harness_finish("dispatch_fanout");
}
