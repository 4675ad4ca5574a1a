/* libnotify.md §4 notify_many_dups_posts, on a descriptor: 500 registrations sharing one
   pipe (NOTIFY_REUSE) each receive their token, 4 bytes in network byte order, from one
   post; the pipe closes with the last cancel. Builds with plain gcc. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <notify.h>
#include <poll.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"

#define COUNT 500

int main(void) {
  char name[128];
  snprintf(name, sizeof name, "org.notifybus.test.fd.%d", getpid());
  static int tokens[COUNT];
  static int seen[COUNT];
  int fd = -1;
  EXPECT_STATUS(notify_register_file_descriptor(name, &fd, 0, &tokens[0]), NOTIFY_STATUS_OK);
  EXPECT(fd >= 0 && fcntl(fd, F_GETFD) != -1, "descriptor %d", fd);
  for (int i = 1; i < COUNT; i++) {
    int shared = fd;
    EXPECT_STATUS(notify_register_file_descriptor(name, &shared, NOTIFY_REUSE, &tokens[i]),
                  NOTIFY_STATUS_OK);
    EXPECT(shared == fd, "REUSE changed the descriptor to %d", shared);
  }
  EXPECT_STATUS(notify_post(name), NOTIFY_STATUS_OK);
  int received = 0;
  long long deadline = harness_now_ms() + 10000;
  while (received < COUNT && harness_now_ms() < deadline) {
    struct pollfd wait = {fd, POLLIN, 0};
    if (poll(&wait, 1, 100) <= 0) continue;
    uint32_t value;
    ssize_t got = read(fd, &value, sizeof value);
    if (got != sizeof value) continue;
    int token = (int)ntohl(value);
    int known = 0;
    for (int i = 0; i < COUNT; i++) {
      if (tokens[i] == token) {
        EXPECT(!seen[i], "token %d arrived twice", token);
        seen[i] = 1;
        known = 1;
      }
    }
    EXPECT(known, "unknown token %d (raw 0x%08x)", token, value);
    received++;
  }
  EXPECT(received == COUNT, "received %d of %d tokens", received, COUNT);

  /* A descriptor this library did not make is refused with NOTIFY_REUSE. */
  int pipe_ends[2];
  EXPECT(pipe(pipe_ends) == 0, "pipe");
  int foreign = pipe_ends[0], token = 0;
  EXPECT_STATUS(notify_register_file_descriptor(name, &foreign, NOTIFY_REUSE, &token),
                NOTIFY_STATUS_INVALID_FILE);
  EXPECT_STATUS(notify_register_file_descriptor(name, NULL, 0, &token), NOTIFY_STATUS_INVALID_FILE);

  for (int i = 0; i < COUNT; i++) EXPECT_STATUS(notify_cancel(tokens[i]), NOTIFY_STATUS_OK);
  EXPECT(fcntl(fd, F_GETFD) == -1 && errno == EBADF, "the pipe is open after the last cancel");
  return harness_finish("fd_reuse");
}
