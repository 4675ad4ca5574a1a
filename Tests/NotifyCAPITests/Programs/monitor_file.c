/* libnotify.md §4 notify_pathwatch: notify_monitor_file posts exactly once per create,
   write and unlink of the watched file, and never for a file that does not change.
   argv[1] is a directory of the test's own. */
#include <fcntl.h>
#include <notify.h>
#include <notify_private.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"

static atomic_int watched_posts, quiet_posts;

/* Waits past Darwin's 100 ms coalescing window for the count to settle. */
static int settled(atomic_int *counter) {
  harness_sleep_ms(1000);
  return atomic_load(counter);
}

int main(int argc, char **argv) {
  if (argc != 2) return 64;
  char path[1024], quiet[1024], name[128], quiet_name[128];
  snprintf(path, sizeof path, "%s/watched", argv[1]);
  snprintf(quiet, sizeof quiet, "%s/unchanged", argv[1]);
  snprintf(name, sizeof name, "org.notifybus.test.monitor.%d", getpid());
  snprintf(quiet_name, sizeof quiet_name, "org.notifybus.test.monitor.quiet.%d", getpid());
  int existing = open(quiet, O_WRONLY | O_CREAT, 0600);
  EXPECT(existing >= 0, "cannot create %s", quiet);
  close(existing);

  dispatch_queue_t queue = dispatch_queue_create("monitor", DISPATCH_QUEUE_SERIAL);
  int token, quiet_token, check_token;
  EXPECT_STATUS(notify_register_dispatch(name, &token, queue, ^(int t) {
                  (void)t;
                  atomic_fetch_add(&watched_posts, 1);
                }),
                NOTIFY_STATUS_OK);
  EXPECT_STATUS(notify_register_dispatch(quiet_name, &quiet_token, queue, ^(int t) {
                  (void)t;
                  atomic_fetch_add(&quiet_posts, 1);
                }),
                NOTIFY_STATUS_OK);
  EXPECT_STATUS(notify_register_check(name, &check_token), NOTIFY_STATUS_OK);
  EXPECT_STATUS(notify_monitor_file(token, path, 0), NOTIFY_STATUS_OK);
  EXPECT_STATUS(notify_monitor_file(token, path, 0), NOTIFY_STATUS_INVALID_REQUEST);
  EXPECT_STATUS(notify_monitor_file(quiet_token, quiet, 0), NOTIFY_STATUS_OK);
  EXPECT(settled(&watched_posts) == 0, "a post before any change");

  int fd = open(path, O_RDONLY | O_CREAT | O_EXCL, 0600);
  EXPECT(fd >= 0, "cannot create %s", path);
  close(fd);
  EXPECT(settled(&watched_posts) == 1, "create: %d posts", atomic_load(&watched_posts));

  fd = open(path, O_WRONLY | O_APPEND);
  EXPECT(write(fd, "hello\n", 6) == 6, "write");
  close(fd);
  EXPECT(settled(&watched_posts) == 2, "write: %d posts", atomic_load(&watched_posts));

  EXPECT(unlink(path) == 0, "unlink");
  EXPECT(settled(&watched_posts) == 3, "unlink: %d posts", atomic_load(&watched_posts));

  int check = 0;
  EXPECT_STATUS(notify_check(check_token, &check), NOTIFY_STATUS_OK);
  EXPECT(check == 1, "first check");
  EXPECT_STATUS(notify_check(check_token, &check), NOTIFY_STATUS_OK);
  EXPECT(check == 0, "the monitor posted to another registration of the name");
  EXPECT(atomic_load(&quiet_posts) == 0, "the unchanged file posted %d times", atomic_load(&quiet_posts));

  EXPECT_STATUS(notify_cancel(token), NOTIFY_STATUS_OK);
  fd = open(path, O_WRONLY | O_CREAT, 0600);
  close(fd);
  EXPECT(settled(&watched_posts) == 3, "a post after cancel");
  return harness_finish("monitor_file");
}
