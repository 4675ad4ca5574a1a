/* The bus dies and comes back at the same address; the process goes on and its tokens
   keep working.

   `bus_restart watch NAME DIR` registers NAME for check, dispatch and file-descriptor
   delivery, prints "ready" and waits for DIR/killed (the test has killed the bus): then
   every call returns its documented status (Protocol/c-api.md) and none aborts. It prints "down" and waits
   for DIR/restarted (the test has restarted the bus): the library reconnects by itself,
   delivers once to every registration (posts may have been missed meanwhile), and then
   "reconnected" is printed and it waits for DIR/posted (another process has posted
   NAME): the post reaches each old token, and new registrations work.
   `bus_restart post NAME` posts NAME once from a process of its own.
   `bus_restart same-bus NAME` checks that a process's two connections (posts, and
   registrations) reach the same bus. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <notify.h>
#include <poll.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"

static atomic_int fired;
static int dispatch_token;

static int wait_for(const char *directory, const char *file) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", directory, file);
  return harness_wait_for_file(path);
}

/* Reads every token waiting in the pipe; returns how many were `token`, -1 on a bad read. */
static int drain(int fd, int token) {
  int count = 0;
  uint32_t value;
  ssize_t got;
  while ((got = read(fd, &value, sizeof value)) == (ssize_t)sizeof value) {
    if ((int)ntohl(value) != token) return -1;
    count++;
  }
  if (got != -1 || errno != EAGAIN) return -1;
  return count;
}

/* Waits up to `limit_ms` for the pipe to carry a token; returns drain's result. */
static int wait_fd(int fd, int token, int limit_ms) {
  struct pollfd ready = {fd, POLLIN, 0};
  if (poll(&ready, 1, limit_ms) != 1) return 0;
  return drain(fd, token);
}

/* Waits up to `limit_ms` for a check token to report a post. */
static int wait_check(int token, int limit_ms) {
  long long deadline = harness_now_ms() + limit_ms;
  int check = 0;
  do {
    if (notify_check(token, &check) != NOTIFY_STATUS_OK) return 0;
    if (check) return 1;
    harness_sleep_ms(5);
  } while (harness_now_ms() < deadline);
  return 0;
}

int main(int argc, char **argv) {
  if (argc == 3 && strcmp(argv[1], "post") == 0) {
    /* Watching the name too, so that the post coming back shows the bus has routed it
       (to the other process as well) before this one exits. */
    int token, check = 0;
    EXPECT_STATUS(notify_register_check(argv[2], &token), NOTIFY_STATUS_OK);
    EXPECT_STATUS(notify_check(token, &check), NOTIFY_STATUS_OK);
    EXPECT_STATUS(notify_post(argv[2]), NOTIFY_STATUS_OK);
    EXPECT(wait_check(token, 5000), "the bus did not route the post");
    return harness_finish("bus_restart post");
  }
  if (argc == 3 && strcmp(argv[1], "same-bus") == 0) {
    /* Posts have a connection of their own; the registrations' connection, made later,
       goes to the bus the first one reached, whatever the environment says by then. */
    EXPECT_STATUS(notify_post(argv[2]), NOTIFY_STATUS_OK);
    setenv("NOTIFYBUS_BUS_ADDRESS", "unix:path=/nonexistent/notifybus-test-bus", 1);
    int token, check = 0;
    EXPECT_STATUS(notify_register_check(argv[2], &token), NOTIFY_STATUS_OK);
    EXPECT_STATUS(notify_check(token, &check), NOTIFY_STATUS_OK);
    EXPECT_STATUS(notify_post(argv[2]), NOTIFY_STATUS_OK);
    EXPECT(wait_check(token, 5000), "a post did not reach this process's own registration");
    /* Names of the same length posted in turn stay apart (the library remembers the last
       names it was given). */
    char other[256];
    snprintf(other, sizeof other, "%s", argv[2]);
    other[strlen(other) - 1] ^= 1;
    int other_token;
    EXPECT_STATUS(notify_register_check(other, &other_token), NOTIFY_STATUS_OK);
    EXPECT_STATUS(notify_check(other_token, &check), NOTIFY_STATUS_OK);
    for (int i = 0; i < 3; i++) EXPECT_STATUS(notify_post(argv[2]), NOTIFY_STATUS_OK);
    EXPECT_STATUS(notify_post(other), NOTIFY_STATUS_OK);
    EXPECT(wait_check(other_token, 5000), "the second name's post did not arrive");
    EXPECT(wait_check(token, 5000), "the first name's posts did not arrive");
    EXPECT_STATUS(notify_post(argv[2]), NOTIFY_STATUS_OK);
    EXPECT(wait_check(token, 5000), "the first name's last post did not arrive");
    EXPECT_STATUS(notify_check(other_token, &check), NOTIFY_STATUS_OK);
    EXPECT(check == 0, "the first name's post reached the second name's registration");
    return harness_finish("bus_restart same-bus");
  }
  if (argc != 4 || strcmp(argv[1], "watch") != 0) return 64;
  const char *name = argv[2], *directory = argv[3];
  dispatch_queue_t queue = dispatch_queue_create("bus_restart", DISPATCH_QUEUE_SERIAL);
  int check_token, fd_token, fd = -1, check = 0;
  EXPECT_STATUS(notify_register_check(name, &check_token), NOTIFY_STATUS_OK);
  EXPECT_STATUS(notify_check(check_token, &check), NOTIFY_STATUS_OK);
  EXPECT(check == 1, "the first check is %d", check);
  EXPECT_STATUS(notify_register_dispatch(name, &dispatch_token, queue, ^(int t) {
                  EXPECT(t == dispatch_token, "the handler got token %d", t);
                  atomic_fetch_add(&fired, 1);
                }),
                NOTIFY_STATUS_OK);
  EXPECT_STATUS(notify_register_file_descriptor(name, &fd, 0, &fd_token), NOTIFY_STATUS_OK);
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
  printf("ready\n");
  fflush(stdout);

  if (!wait_for(directory, "killed")) return 1;
  /* Wait until the library has seen the bus go: a registration of a new name then fails
     with NOTIFY_STATUS_FAILED ("try again"), as Protocol/c-api.md says. */
  char other[256];
  snprintf(other, sizeof other, "%s.while-down", name);
  int down_token = 0;
  uint32_t status = NOTIFY_STATUS_OK;
  long long deadline = harness_now_ms() + 10000;
  while (harness_now_ms() < deadline) {
    status = notify_register_check(other, &down_token);
    if (status != NOTIFY_STATUS_OK) break;
    notify_cancel(down_token);
    harness_sleep_ms(10);
  }
  EXPECT(status == NOTIFY_STATUS_FAILED, "a registration while the bus is down returned %u",
         status);
  EXPECT(down_token == NOTIFY_TOKEN_INVALID, "the failed registration stored token %d",
         down_token);
  /* The old tokens stay valid and answer from what arrived; a post waits for the bus. */
  EXPECT(notify_is_valid_token(check_token), "the check token is no longer valid");
  EXPECT(notify_is_valid_token(dispatch_token), "the dispatch token is no longer valid");
  EXPECT_STATUS(notify_check(check_token, &check), NOTIFY_STATUS_OK);
  EXPECT_STATUS(notify_suspend(fd_token), NOTIFY_STATUS_OK);
  EXPECT_STATUS(notify_resume(fd_token), NOTIFY_STATUS_OK);
  /* A post is queued and sent once the bus is back. */
  EXPECT_STATUS(notify_post(name), NOTIFY_STATUS_OK);
  uint64_t state = 0;
  EXPECT_STATUS(notify_get_state(check_token, &state), NOTIFY_STATUS_SERVER_NOT_FOUND);
  printf("down\n");
  fflush(stdout);

  if (!wait_for(directory, "restarted")) return 1;
  /* Reconnected: every registration is delivered once, as posts may have been lost. */
  EXPECT(harness_wait_count(&fired, 1, 20000) >= 1, "no delivery after the bus came back");
  EXPECT(wait_check(check_token, 5000), "the check token saw no delivery after the restart");
  EXPECT(wait_fd(fd, fd_token, 5000) >= 1, "the descriptor got nothing after the restart");
  /* Quiet again before the other process posts. */
  harness_sleep_ms(100);
  notify_check(check_token, &check);
  drain(fd, fd_token);
  int before = atomic_load(&fired);
  printf("reconnected\n");
  fflush(stdout);

  if (!wait_for(directory, "posted")) return 1;
  EXPECT(harness_wait_count(&fired, before + 1, 5000) > before,
         "the dispatch token missed a post made after the restart");
  EXPECT(wait_check(check_token, 5000), "the check token missed a post made after the restart");
  EXPECT(wait_fd(fd, fd_token, 5000) >= 1, "the descriptor missed a post made after the restart");
  /* New registrations and this process's own posts work again. */
  int new_token;
  EXPECT_STATUS(notify_register_check(other, &new_token), NOTIFY_STATUS_OK);
  EXPECT_STATUS(notify_check(new_token, &check), NOTIFY_STATUS_OK);
  EXPECT_STATUS(notify_post(other), NOTIFY_STATUS_OK);
  EXPECT(wait_check(new_token, 5000), "a registration made after the restart missed a post");
  EXPECT_STATUS(notify_cancel(new_token), NOTIFY_STATUS_OK);
  EXPECT_STATUS(notify_cancel(check_token), NOTIFY_STATUS_OK);
  EXPECT_STATUS(notify_cancel(dispatch_token), NOTIFY_STATUS_OK);
  EXPECT_STATUS(notify_cancel(fd_token), NOTIFY_STATUS_OK);
  dispatch_release(queue);
  return harness_finish("bus_restart");
}
