#include "CBaseline.h"

#include <dbus/dbus.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#define BENCH_INTERFACE "org.notifybus.Bench"
#define BENCH_PATH "/org/notifybus/Bench"

static int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static DBusConnection *open_connection(const char *address) {
  DBusError error;
  dbus_error_init(&error);
  DBusConnection *connection = dbus_connection_open_private(address, &error);
  if (connection == NULL || !dbus_bus_register(connection, &error)) {
    fprintf(stderr, "cbaseline: %s\n", error.message ? error.message : "connect failed");
    dbus_error_free(&error);
    if (connection) {
      dbus_connection_close(connection);
      dbus_connection_unref(connection);
    }
    return NULL;
  }
  dbus_connection_set_exit_on_disconnect(connection, FALSE);
  return connection;
}

static void close_connection(DBusConnection *connection) {
  dbus_connection_close(connection);
  dbus_connection_unref(connection);
}

static DBusMessage *make_tick(uint64_t sequence) {
  DBusMessage *message = dbus_message_new_signal(BENCH_PATH, BENCH_INTERFACE, "Tick");
  const char *name = "bench";
  uint64_t sent = (uint64_t)now_ns();
  dbus_message_append_args(message, DBUS_TYPE_STRING, &name, DBUS_TYPE_UINT64, &sequence,
                           DBUS_TYPE_UINT64, &sent, DBUS_TYPE_INVALID);
  return message;
}

struct receiver {
  DBusConnection *connection;
  int expected;
  int received;
  double *samples;      // latency mode: one per signal
  sem_t arrived;        // latency mode: posted per signal
  int64_t last_ns;      // throughput mode: time of the last signal
  volatile int stop;
  int64_t deadline_ns;  // give up after this, so a lost signal cannot hang the run
};

static void *receive(void *argument) {
  struct receiver *r = argument;
  r->deadline_ns = now_ns() + 60 * (int64_t)1000000000;
  while (!r->stop && r->received < r->expected && now_ns() < r->deadline_ns) {
    if (!dbus_connection_read_write(r->connection, 100)) break;
    DBusMessage *message;
    while ((message = dbus_connection_pop_message(r->connection)) != NULL) {
      if (dbus_message_is_signal(message, BENCH_INTERFACE, "Tick")) {
        const char *name;
        uint64_t sequence, sent;
        if (dbus_message_get_args(message, NULL, DBUS_TYPE_STRING, &name, DBUS_TYPE_UINT64,
                                  &sequence, DBUS_TYPE_UINT64, &sent, DBUS_TYPE_INVALID)) {
          int64_t now = now_ns();
          if (r->samples && sequence < (uint64_t)r->expected)
            r->samples[sequence] = (double)(now - (int64_t)sent) / 1000.0;
          r->received++;
          r->last_ns = now;
          if (r->samples) sem_post(&r->arrived);
        }
      }
      dbus_message_unref(message);
    }
  }
  return NULL;
}

static int start_receiver(struct receiver *r, const char *address, pthread_t *thread) {
  r->connection = open_connection(address);
  if (!r->connection) return -1;
  DBusError error;
  dbus_error_init(&error);
  dbus_bus_add_match(r->connection, "type='signal',interface='" BENCH_INTERFACE "'", &error);
  if (dbus_error_is_set(&error)) {
    dbus_error_free(&error);
    close_connection(r->connection);
    return -1;
  }
  return pthread_create(thread, NULL, receive, r);
}

int cbaseline_latency(const char *address, int count, double *samples) {
  struct receiver r = {.expected = count, .samples = samples};
  sem_init(&r.arrived, 0, 0);
  pthread_t thread;
  if (start_receiver(&r, address, &thread) != 0) return -1;
  DBusConnection *sender = open_connection(address);
  if (!sender) return -1;
  int result = 0;
  for (int i = 0; i < count; i++) {
    DBusMessage *message = make_tick((uint64_t)i);
    dbus_connection_send(sender, message, NULL);
    dbus_connection_flush(sender);
    dbus_message_unref(message);
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += 5;
    if (sem_timedwait(&r.arrived, &deadline) != 0) {
      result = -1;
      break;
    }
  }
  r.stop = 1;
  pthread_join(thread, NULL);
  close_connection(sender);
  close_connection(r.connection);
  sem_destroy(&r.arrived);
  return result;
}

double cbaseline_throughput(const char *address, int count) {
  struct receiver r = {.expected = count};
  pthread_t thread;
  if (start_receiver(&r, address, &thread) != 0) return -1;
  DBusConnection *sender = open_connection(address);
  if (!sender) return -1;
  int64_t start = now_ns();
  for (int i = 0; i < count; i++) {
    DBusMessage *message = make_tick((uint64_t)i);
    dbus_connection_send(sender, message, NULL);
    dbus_message_unref(message);
    if (dbus_connection_get_outgoing_size(sender) > 256 * 1024) dbus_connection_flush(sender);
  }
  dbus_connection_flush(sender);
  pthread_join(thread, NULL);
  double seconds = (double)(r.last_ns - start) / 1e9;
  int received = r.received;
  close_connection(sender);
  close_connection(r.connection);
  return received == count && seconds > 0 ? count / seconds : -1;
}

long long cbaseline_receive(const char *address, const char *interface, int count) {
  DBusConnection *connection = open_connection(address);
  if (!connection) return -1;
  char rule[512];
  snprintf(rule, sizeof rule, "type='signal',interface='%s'", interface);
  DBusError error;
  dbus_error_init(&error);
  dbus_bus_add_match(connection, rule, &error);
  if (dbus_error_is_set(&error)) {
    dbus_error_free(&error);
    close_connection(connection);
    return -1;
  }
  printf("ready\n");
  fflush(stdout);
  int received = 0;
  int64_t last = -1;
  int64_t deadline = now_ns() + 60 * (int64_t)1000000000;
  while (received < count && now_ns() < deadline) {
    if (!dbus_connection_read_write(connection, 100)) break;
    DBusMessage *message;
    while ((message = dbus_connection_pop_message(connection)) != NULL) {
      if (dbus_message_get_type(message) == DBUS_MESSAGE_TYPE_SIGNAL &&
          dbus_message_has_interface(message, interface)) {
        const char *name;
        if (dbus_message_get_args(message, NULL, DBUS_TYPE_STRING, &name, DBUS_TYPE_INVALID)) {
          received++;
          last = now_ns();
        }
      }
      dbus_message_unref(message);
    }
  }
  close_connection(connection);
  return received == count ? last : -1;
}

int cbaseline_send(const char *address, const char *interface, int count) {
  DBusConnection *sender = open_connection(address);
  if (!sender) return -1;
  for (int i = 0; i < count; i++) {
    DBusMessage *message = dbus_message_new_signal(BENCH_PATH, interface, "Posted");
    const char *name = "bench.name";
    uint64_t sequence = (uint64_t)i;
    dbus_message_append_args(message, DBUS_TYPE_STRING, &name, DBUS_TYPE_UINT64, &sequence,
                             DBUS_TYPE_INVALID);
    dbus_connection_send(sender, message, NULL);
    dbus_message_unref(message);
    if (dbus_connection_get_outgoing_size(sender) > 256 * 1024) dbus_connection_flush(sender);
  }
  dbus_connection_flush(sender);
  close_connection(sender);
  return 0;
}
