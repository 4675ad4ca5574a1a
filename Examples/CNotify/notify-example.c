/*
 * notify-example: the Darwin notify(3) C API on Linux, as code written for macOS uses it.
 *
 *   clang -o notify-example notify-example.c $(pkg-config --cflags --libs notifybus-dispatch)
 *   ./notify-example group.example.saved 3
 *
 * Watches NAME with a dispatch handler and a check registration, posts it COUNT times
 * (default 3), waiting for each post to come back, and prints what it saw. Exits 0 when
 * every post arrived, 1 when one did not arrive within 5 seconds, 64 for bad arguments.
 */
#include <dispatch/dispatch.h>
#include <notify.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
  if (argc < 2 || argc > 3) {
    fprintf(stderr, "usage: notify-example NAME [COUNT]\n");
    return 64;
  }
  const char *name = argv[1];
  int count = argc == 3 ? atoi(argv[2]) : 3;
  if (count < 1) {
    fprintf(stderr, "notify-example: COUNT must be a positive number, not '%s'\n", argv[2]);
    return 64;
  }

  dispatch_queue_t queue = dispatch_queue_create("org.notifybus.example", DISPATCH_QUEUE_SERIAL);
  dispatch_semaphore_t arrived = dispatch_semaphore_create(0);
  int watch_token, check_token;
  uint32_t status = notify_register_dispatch(name, &watch_token, queue, ^(int token) {
    printf("received %s (token %d)\n", name, token);
    fflush(stdout);
    dispatch_semaphore_signal(arrived);
  });
  if (status != NOTIFY_STATUS_OK) {
    fprintf(stderr, "notify-example: cannot watch '%s': status %u\n", name, status);
    return 1;
  }
  notify_register_check(name, &check_token);
  int changed = 0;
  notify_check(check_token, &changed); /* the first check is always true */

  for (int i = 1; i <= count; i++) {
    status = notify_post(name);
    if (status != NOTIFY_STATUS_OK) {
      fprintf(stderr, "notify-example: cannot post '%s': status %u\n", name, status);
      return 1;
    }
    printf("posted %s (%d of %d)\n", name, i, count);
    fflush(stdout);
    if (dispatch_semaphore_wait(arrived, dispatch_time(DISPATCH_TIME_NOW, 5 * NSEC_PER_SEC)) != 0) {
      fprintf(stderr, "notify-example: post %d of '%s' did not arrive\n", i, name);
      return 1;
    }
  }
  notify_check(check_token, &changed);
  printf("check: %s\n", changed ? "posted since the last check" : "nothing new");
  notify_cancel(watch_token);
  notify_cancel(check_token);
  dispatch_release(queue);
  return 0;
}
