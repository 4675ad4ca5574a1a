// The Maildir + inotify handoff, written the way a careful C programmer would.
#define _GNU_SOURCE
#include "CMaildirBaseline.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int write_all(int fd, const char *bytes, size_t count) {
  while (count > 0) {
    ssize_t done = write(fd, bytes, count);
    if (done < 0) {
      if (errno == EINTR) continue;
      return -1;
    }
    bytes += done;
    count -= (size_t)done;
  }
  return 0;
}

// The reader: for each file moved into new/, open it, read it, take the item number from it,
// stamp the arrival time in the shared table, remove the file and tell the writer. It runs
// until the session stops it.
static void reader(const char *directory, int watch_fd, uint64_t *arrivals, int capacity, int ack) {
  char events[64 * 1024] __attribute__((aligned(__alignof__(struct inotify_event))));
  char path[PATH_MAX];
  char content[4096];
  for (;;) {
    ssize_t length = read(watch_fd, events, sizeof events);
    if (length < 0) {
      if (errno == EINTR) continue;
      _exit(1);
    }
    for (char *cursor = events; cursor < events + length;) {
      struct inotify_event *event = (struct inotify_event *)cursor;
      cursor += sizeof *event + event->len;
      if (!(event->mask & IN_MOVED_TO) || event->len == 0) continue;
      snprintf(path, sizeof path, "%s/new/%s", directory, event->name);
      int fd = open(path, O_RDONLY | O_CLOEXEC);
      if (fd < 0) _exit(2);
      size_t used = 0;
      for (;;) {
        ssize_t got = read(fd, content + used, sizeof content - 1 - used);
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) _exit(3);
        if (got == 0 || used + (size_t)got >= sizeof content - 1) break;
        used += (size_t)got;
      }
      close(fd);
      content[used] = 0;
      int index = -1;
      const char *number = strstr(content, "number ");
      if (number) index = atoi(number + 7);
      if (index < 0 || index >= capacity) _exit(4);
      arrivals[index] = now_ns();
      unlink(path);
      if (write_all(ack, (const char *)&index, sizeof index) < 0) _exit(5);
    }
  }
}

static int store(int tmp_fd, int new_fd, int index) {
  char name[64], content[512];
  snprintf(name, sizeof name, "%d.%d", index, (int)getpid());
  int length = snprintf(
    content, sizeof content,
    "title: Shared article number %d with a reasonably long title\n"
    "url: https://example.com/articles/%d\n",
    index, index);
  int fd = openat(tmp_fd, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) return -1;
  if (write_all(fd, content, (size_t)length) < 0 || fdatasync(fd) < 0) {
    close(fd);
    return -1;
  }
  close(fd);
  if (renameat(tmp_fd, name, new_fd, name) < 0) return -1;
  return fsync(new_fd);
}

static int read_ack(int fd, int *index) {
  size_t used = 0;
  while (used < sizeof *index) {
    ssize_t got = read(fd, (char *)index + used, sizeof *index - used);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return -1;
    used += (size_t)got;
  }
  return 0;
}

struct cmaildir_session {
  char directory[PATH_MAX];
  int tmp_fd, new_fd, ack_fd;
  pid_t child;
  uint64_t *arrivals;
  size_t table;
  int capacity;
  int next;  // the next item's number
};

cmaildir_session *cmaildir_open(const char *directory, int capacity) {
  char path[PATH_MAX];
  if (capacity <= 0 || strlen(directory) >= PATH_MAX - 8) {
    errno = EINVAL;
    return NULL;
  }
  cmaildir_session *session = calloc(1, sizeof *session);
  if (!session) return NULL;
  strcpy(session->directory, directory);
  session->tmp_fd = session->new_fd = session->ack_fd = -1;
  session->child = -1;
  session->arrivals = MAP_FAILED;
  session->capacity = capacity;
  int watch_fd = -1;
  int acks[2] = {-1, -1};
  if (mkdir(directory, 0700) < 0) goto fail;
  snprintf(path, sizeof path, "%s/tmp", directory);
  if (mkdir(path, 0700) < 0) goto fail;
  session->tmp_fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  snprintf(path, sizeof path, "%s/new", directory);
  if (mkdir(path, 0700) < 0) goto fail;
  session->new_fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  watch_fd = inotify_init1(IN_CLOEXEC);
  if (session->tmp_fd < 0 || session->new_fd < 0 || watch_fd < 0) goto fail;
  // The watch exists before the first item is written, as in a reader started first.
  if (inotify_add_watch(watch_fd, path, IN_MOVED_TO) < 0) goto fail;
  session->table = sizeof(uint64_t) * (size_t)capacity;
  session->arrivals =
    mmap(NULL, session->table, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (session->arrivals == MAP_FAILED) goto fail;
  if (pipe2(acks, O_CLOEXEC) < 0) goto fail;
  session->child = fork();
  if (session->child < 0) goto fail;
  if (session->child == 0) {
    close(acks[0]);
    reader(session->directory, watch_fd, session->arrivals, capacity, acks[1]);
  }
  close(acks[1]);
  close(watch_fd);
  session->ack_fd = acks[0];
  return session;
fail:;
  int saved = errno;
  if (watch_fd >= 0) close(watch_fd);
  if (acks[0] >= 0) close(acks[0]);
  if (acks[1] >= 0) close(acks[1]);
  cmaildir_close(session);
  errno = saved;
  return NULL;
}

// Takes `count` item numbers, or fails with ENOSPC when the session has fewer left.
static int take(cmaildir_session *session, int count, int *first) {
  if (count < 0 || count > session->capacity - session->next) {
    errno = ENOSPC;
    return -1;
  }
  *first = session->next;
  session->next += count;
  return 0;
}

int cmaildir_latency(cmaildir_session *session, int count, double *samples, double *returned) {
  int first, index;
  if (take(session, count, &first) < 0) return -1;
  for (int item = 0; item < count; item++) {
    uint64_t start = now_ns();
    if (store(session->tmp_fd, session->new_fd, first + item) < 0) return -1;
    if (returned) returned[item] = (double)(now_ns() - start) / 1000.0;
    if (read_ack(session->ack_fd, &index) < 0) return -1;
    samples[item] = (double)(session->arrivals[first + item] - start) / 1000.0;
  }
  return 0;
}

int cmaildir_throughput(cmaildir_session *session, int count, double *seconds) {
  int first, index;
  if (take(session, count, &first) < 0) return -1;
  uint64_t start = now_ns();
  for (int item = first; item < first + count; item++) {
    if (store(session->tmp_fd, session->new_fd, item) < 0) return -1;
  }
  for (int item = first; item < first + count; item++) {
    if (read_ack(session->ack_fd, &index) < 0) return -1;
  }
  uint64_t last = start;
  for (int item = first; item < first + count; item++) {
    if (session->arrivals[item] > last) last = session->arrivals[item];
  }
  *seconds = (double)(last - start) / 1e9;
  return 0;
}

void cmaildir_close(cmaildir_session *session) {
  if (!session) return;
  int saved = errno;
  if (session->child > 0) {
    kill(session->child, SIGKILL);
    waitpid(session->child, NULL, 0);
  }
  if (session->arrivals != MAP_FAILED) munmap(session->arrivals, session->table);
  if (session->ack_fd >= 0) close(session->ack_fd);
  if (session->tmp_fd >= 0) close(session->tmp_fd);
  if (session->new_fd >= 0) close(session->new_fd);
  free(session);
  errno = saved;
}
