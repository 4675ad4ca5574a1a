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
// stamp the arrival time in the shared table, remove the file and tell the writer.
static void reader(const char *directory, int watch_fd, uint64_t *arrivals, int total, int ack) {
  char events[64 * 1024] __attribute__((aligned(__alignof__(struct inotify_event))));
  char path[PATH_MAX];
  char content[4096];
  int seen = 0;
  while (seen < total) {
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
      if (index < 0 || index >= total) _exit(4);
      arrivals[index] = now_ns();
      unlink(path);
      seen++;
      if (write_all(ack, (const char *)&index, sizeof index) < 0) _exit(5);
    }
  }
  _exit(0);
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

int cmaildir_handoff(
    const char *directory, int latency, int throughput, double *samples, double *rate) {
  char path[PATH_MAX];
  int total = latency + throughput;
  if (mkdir(directory, 0700) < 0) return -1;
  snprintf(path, sizeof path, "%s/tmp", directory);
  if (mkdir(path, 0700) < 0) return -1;
  int tmp_fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  snprintf(path, sizeof path, "%s/new", directory);
  if (mkdir(path, 0700) < 0) return -1;
  int new_fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  int watch_fd = inotify_init1(IN_CLOEXEC);
  if (tmp_fd < 0 || new_fd < 0 || watch_fd < 0) return -1;
  // The watch exists before the first item is written, as in a reader started first.
  if (inotify_add_watch(watch_fd, path, IN_MOVED_TO) < 0) return -1;
  size_t table = sizeof(uint64_t) * (size_t)total;
  uint64_t *arrivals = mmap(NULL, table, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (arrivals == MAP_FAILED) return -1;
  int acks[2];
  if (pipe2(acks, O_CLOEXEC) < 0) return -1;
  pid_t child = fork();
  if (child < 0) return -1;
  if (child == 0) {
    close(acks[0]);
    reader(directory, watch_fd, arrivals, total, acks[1]);
  }
  close(acks[1]);
  close(watch_fd);
  int result = -1;
  int index;
  for (int item = 0; item < latency; item++) {
    uint64_t start = now_ns();
    if (store(tmp_fd, new_fd, item) < 0 || read_ack(acks[0], &index) < 0) goto done;
    samples[item] = (double)(arrivals[item] - start) / 1000.0;
  }
  uint64_t start = now_ns();
  for (int item = latency; item < total; item++) {
    if (store(tmp_fd, new_fd, item) < 0) goto done;
  }
  for (int item = latency; item < total; item++) {
    if (read_ack(acks[0], &index) < 0) goto done;
  }
  uint64_t last = start;
  for (int item = latency; item < total; item++) {
    if (arrivals[item] > last) last = arrivals[item];
  }
  *rate = throughput / ((double)(last - start) / 1e9);
  result = 0;
done:;
  int saved = errno;
  kill(child, SIGKILL);
  waitpid(child, NULL, 0);
  munmap(arrivals, table);
  close(acks[0]);
  close(tmp_fd);
  close(new_fd);
  errno = saved;
  return result;
}
