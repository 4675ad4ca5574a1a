#include "CNotifyBench.h"

#include <dispatch/dispatch.h>
#include <notify.h>
#include <notify_private.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

void cnotify_use_bus(const char *address) { setenv("NOTIFYBUS_BUS_ADDRESS", address, 1); }

int cnotify_latency(const char *name, int count, double *samples) {
  dispatch_queue_t queue = dispatch_queue_create("org.notifybus.bench.latency", DISPATCH_QUEUE_SERIAL);
  dispatch_semaphore_t arrived = dispatch_semaphore_create(0);
  static _Atomic int64_t posted_at;
  __block int index = 0;
  int token;
  if (notify_register_dispatch(name, &token, queue, ^(int t) {
        (void)t;
        int64_t now = now_ns();
        if (index < count) samples[index++] = (double)(now - atomic_load(&posted_at)) / 1000.0;
        dispatch_semaphore_signal(arrived);
      }) != NOTIFY_STATUS_OK)
    return -1;
  int result = 0;
  for (int i = 0; i < count; i++) {
    atomic_store(&posted_at, now_ns());
    if (notify_post(name) != NOTIFY_STATUS_OK ||
        dispatch_semaphore_wait(arrived, dispatch_time(DISPATCH_TIME_NOW, 5 * NSEC_PER_SEC)) != 0) {
      result = -1;
      break;
    }
  }
  notify_cancel(token);
  dispatch_release(queue);
  return result;
}

int cnotify_fd_latency(const char *name, int count, double *samples) {
  int token, fd = -1;
  if (notify_register_file_descriptor(name, &fd, 0, &token) != NOTIFY_STATUS_OK) return -1;
  int result = 0;
  for (int i = 0; i < count && result == 0; i++) {
    int64_t start = now_ns();
    if (notify_post(name) != NOTIFY_STATUS_OK) result = -1;
    struct pollfd ready = {fd, POLLIN, 0};
    uint32_t value;
    if (result == 0 && (poll(&ready, 1, 5000) != 1 || read(fd, &value, sizeof value) != sizeof value))
      result = -1;
    samples[i] = (double)(now_ns() - start) / 1000.0;
  }
  notify_cancel(token);
  return result;
}

double cnotify_throughput(const char *name, int count) {
  int token;
  if (notify_register_check(name, &token) != NOTIFY_STATUS_OK) return -1;
  uint32_t first = 0, last = 0;
  notify_peek(token, &first);
  int64_t start = now_ns();
  for (int i = 0; i < count; i++) {
    if (notify_post(name) != NOTIFY_STATUS_OK) {
      notify_cancel(token);
      return -1;
    }
  }
  int64_t deadline = start + 60 * (int64_t)1000000000;
  int64_t end = start;
  while (now_ns() < deadline) {
    notify_peek(token, &last);
    end = now_ns();
    if (last - first >= (uint32_t)count) break;
    usleep(50);
  }
  notify_cancel(token);
  if (last - first < (uint32_t)count || end <= start) return -1;
  return count / ((double)(end - start) / 1e9);
}

int cnotify_parallel_rounds(const char *name, int count, double *seconds) {
  static atomic_int failures;
  atomic_store(&failures, 0);
  dispatch_queue_t queue = dispatch_queue_create("org.notifybus.bench.parallel", DISPATCH_QUEUE_SERIAL);
  int64_t start = now_ns();
  dispatch_apply((size_t)count, DISPATCH_APPLY_AUTO, ^(size_t i) {
    (void)i;
    int token;
    if (notify_register_check(name, &token) != NOTIFY_STATUS_OK) atomic_fetch_add(&failures, 1);
    if (notify_cancel(token) != NOTIFY_STATUS_OK) atomic_fetch_add(&failures, 1);
    if (notify_register_dispatch(name, &token, queue, ^(int t) { (void)t; }) != NOTIFY_STATUS_OK)
      atomic_fetch_add(&failures, 1);
    if (notify_cancel(token) != NOTIFY_STATUS_OK) atomic_fetch_add(&failures, 1);
    if (notify_post(name) != NOTIFY_STATUS_OK) atomic_fetch_add(&failures, 1);
  });
  *seconds = (double)(now_ns() - start) / 1e9;
  dispatch_release(queue);
  return atomic_load(&failures);
}
