/* libnotify.md §4 parallel_register_cancel: N parallel rounds (argv[1], default 100000)
   of {register_check, cancel, register_dispatch, cancel, post}, on a plain name and then
   on a self. name; every call returns NOTIFY_STATUS_OK. Prints the time per name. */
#include <notify.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"

static atomic_int failures;

static void rounds(const char *name, long count, dispatch_queue_t queue) {
  long long start = harness_now_ms();
  dispatch_apply((size_t)count, DISPATCH_APPLY_AUTO, ^(size_t index) {
    (void)index;
    int token;
    if (notify_register_check(name, &token) != NOTIFY_STATUS_OK) atomic_fetch_add(&failures, 1);
    if (notify_cancel(token) != NOTIFY_STATUS_OK) atomic_fetch_add(&failures, 1);
    if (notify_register_dispatch(name, &token, queue, ^(int t) { (void)t; }) != NOTIFY_STATUS_OK)
      atomic_fetch_add(&failures, 1);
    if (notify_cancel(token) != NOTIFY_STATUS_OK) atomic_fetch_add(&failures, 1);
    if (notify_post(name) != NOTIFY_STATUS_OK) atomic_fetch_add(&failures, 1);
  });
  printf("%s: %ld rounds in %lld ms\n", name, count, harness_now_ms() - start);
}

int main(int argc, char **argv) {
  long count = argc > 1 ? strtol(argv[1], NULL, 10) : 100000;
  dispatch_queue_t queue = dispatch_queue_create("parallel", DISPATCH_QUEUE_SERIAL);
  rounds("com.example.test", count, queue);
  rounds("self.example.test", count, queue);
  EXPECT(atomic_load(&failures) == 0, "%d calls did not return NOTIFY_STATUS_OK", atomic_load(&failures));
  return harness_finish("parallel");
}
