#include "CBaseline.h"

#include <dbus/dbus.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

// A tick carries `sent`, the time its post started (before the message is built).
static DBusMessage *make_tick(uint64_t sequence, uint64_t sent) {
  DBusMessage *message = dbus_message_new_signal(BENCH_PATH, BENCH_INTERFACE, "Tick");
  const char *name = "bench";
  dbus_message_append_args(message, DBUS_TYPE_STRING, &name, DBUS_TYPE_UINT64, &sequence,
                           DBUS_TYPE_UINT64, &sent, DBUS_TYPE_INVALID);
  return message;
}

// The libdispatch functions the dispatch variant uses, declared here so that this file
// needs neither the toolchain's dispatch headers nor blocks (dispatch_queue_t is an object
// pointer, dispatch_function_t a plain C function).
extern void *dispatch_queue_create(const char *label, void *attributes);
extern void dispatch_async_f(void *queue, void *context, void (*work)(void *));
extern void dispatch_release(void *object);

struct receiver {
  DBusConnection *connection;
  int expected;
  int received;
  double *samples;      // latency mode: one per signal
  sem_t arrived;        // latency mode: posted per signal
  void *queue;          // dispatch variant: the handlers' queue
  _Atomic int64_t last_sent;  // dispatch variant: when the last signal was sent
  int64_t last_ns;      // throughput mode: time of the last signal
  volatile int stop;
  int64_t deadline_ns;  // give up after this, so a lost signal cannot hang the run
};

// The dispatch variant's handler: on the queue, it takes the time and wakes the sender.
static void dispatch_handler(void *argument) {
  struct receiver *r = argument;
  int64_t now = now_ns();
  int index = r->received - 1;
  if (index >= 0 && index < r->expected) r->samples[index] = (double)(now - r->last_sent) / 1000.0;
  sem_post(&r->arrived);
}

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
          if (r->samples && r->queue) {
            dispatch_async_f(r->queue, r, dispatch_handler);
          } else if (r->samples) {
            sem_post(&r->arrived);
          }
        }
      }
      dbus_message_unref(message);
    }
  }
  return NULL;
}

/* A connection that receives the bench's ticks, from `sender` only when not NULL; NULL on
   error. */
static DBusConnection *open_receiver_from(const char *address, const char *sender) {
  DBusConnection *connection = open_connection(address);
  if (!connection) return NULL;
  char rule[256];
  snprintf(rule, sizeof rule, "type='signal',interface='" BENCH_INTERFACE "'%s%s%s",
           sender ? ",sender='" : "", sender ? sender : "", sender ? "'" : "");
  DBusError error;
  dbus_error_init(&error);
  dbus_bus_add_match(connection, rule, &error);
  if (dbus_error_is_set(&error)) {
    dbus_error_free(&error);
    close_connection(connection);
    return NULL;
  }
  return connection;
}

static DBusConnection *open_receiver(const char *address) {
  return open_receiver_from(address, NULL);
}

static int start_receiver(struct receiver *r, const char *address, pthread_t *thread) {
  r->connection = open_receiver(address);
  if (!r->connection) return -1;
  return pthread_create(thread, NULL, receive, r);
}

/* One block of latency samples on open connections: a tick at a time, each awaited, the
   receiver on a thread of its own for the block. With `queue`, the receiver runs its
   handler there (and times from the send, recorded in last_sent). */
static int latency_block(DBusConnection *receiving, DBusConnection *sender, int count,
                         double *samples, void *queue) {
  struct receiver r = {
      .connection = receiving, .expected = count, .samples = samples, .queue = queue};
  sem_init(&r.arrived, 0, 0);
  pthread_t thread;
  if (pthread_create(&thread, NULL, receive, &r) != 0) {
    sem_destroy(&r.arrived);
    return -1;
  }
  int result = 0;
  for (int i = 0; i < count; i++) {
    // Both variants' clocks start before the message is built, as the Swift rows' clocks
    // do (taken before post, which builds the message): the plain variant's started after
    // dbus_message_new_signal, which so was left out of the baseline's latency.
    int64_t sent = now_ns();
    if (queue) r.last_sent = sent;
    DBusMessage *message = make_tick((uint64_t)i, (uint64_t)sent);
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
  sem_destroy(&r.arrived);
  return result;
}

/* One latency run on connections of its own. */
static int run_latency(const char *address, int count, double *samples, void *queue) {
  DBusConnection *receiving = open_receiver(address);
  if (!receiving) return -1;
  DBusConnection *sender = open_connection(address);
  if (!sender) {
    close_connection(receiving);
    return -1;
  }
  int result = latency_block(receiving, sender, count, samples, queue);
  close_connection(sender);
  close_connection(receiving);
  return result;
}

struct latency_session {
  DBusConnection *receiving;
  DBusConnection *sender;
};

void *cbaseline_latency_open(const char *address) {
  struct latency_session *session = calloc(1, sizeof *session);
  if (!session) return NULL;
  // The receiver hears this session's sender only: another pair's ticks, sent while this
  // one waits between its blocks, would otherwise queue here.
  session->sender = open_connection(address);
  session->receiving = session->sender
                           ? open_receiver_from(address, dbus_bus_get_unique_name(session->sender))
                           : NULL;
  if (!session->receiving) {
    if (session->sender) close_connection(session->sender);
    free(session);
    return NULL;
  }
  return session;
}

int cbaseline_latency_block(void *session, int count, double *samples) {
  struct latency_session *s = session;
  return latency_block(s->receiving, s->sender, count, samples, NULL);
}

void cbaseline_latency_close(void *session) {
  struct latency_session *s = session;
  close_connection(s->sender);
  close_connection(s->receiving);
  free(s);
}

int cbaseline_latency(const char *address, int count, double *samples) {
  return run_latency(address, count, samples, NULL);
}

int cbaseline_dispatch_latency(const char *address, int count, double *samples) {
  void *queue = dispatch_queue_create("org.notifybus.cbaseline.handlers", NULL);
  int result = run_latency(address, count, samples, queue);
  dispatch_release(queue);
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
    DBusMessage *message = make_tick((uint64_t)i, (uint64_t)now_ns());
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

// MARK: - A method service and its caller (the notifyd suite's baseline)

#define SERVICE_PATH "/org/notifybus/CBaseline"
#define SERVICE_INTERFACE "org.notifybus.CBaseline"

struct service {
  DBusConnection *connection;
  pthread_t thread;
  volatile int stop;
  char names[64][64];
  uint64_t states[64];
  int count;
};

// Looks a name up in a small table, as a state service does.
static uint64_t service_state(struct service *s, const char *name) {
  for (int i = 0; i < s->count; i++)
    if (strcmp(s->names[i], name) == 0) return s->states[i];
  return 0;
}

static void *serve(void *argument) {
  struct service *s = argument;
  while (!s->stop) {
    if (!dbus_connection_read_write(s->connection, 50)) break;
    DBusMessage *message;
    while ((message = dbus_connection_pop_message(s->connection)) != NULL) {
      if (dbus_message_is_method_call(message, SERVICE_INTERFACE, "GetState")) {
        const char *name;
        DBusMessage *reply;
        if (dbus_message_get_args(message, NULL, DBUS_TYPE_STRING, &name, DBUS_TYPE_INVALID)) {
          uint64_t state = service_state(s, name);
          reply = dbus_message_new_method_return(message);
          dbus_message_append_args(reply, DBUS_TYPE_UINT64, &state, DBUS_TYPE_INVALID);
        } else {
          reply = dbus_message_new_error(message, DBUS_ERROR_INVALID_ARGS, "GetState takes (s)");
        }
        dbus_connection_send(s->connection, reply, NULL);
        dbus_message_unref(reply);
      }
      dbus_message_unref(message);
    }
  }
  return NULL;
}

void *cbaseline_start_service(const char *address, const char *service_name) {
  struct service *s = calloc(1, sizeof *s);
  if (!s) return NULL;
  s->connection = open_connection(address);
  if (!s->connection) {
    free(s);
    return NULL;
  }
  strcpy(s->names[0], "bench.state");
  s->states[0] = 42;
  s->count = 1;
  DBusError error;
  dbus_error_init(&error);
  int owned = dbus_bus_request_name(s->connection, service_name, DBUS_NAME_FLAG_DO_NOT_QUEUE,
                                    &error);
  if (owned != DBUS_REQUEST_NAME_REPLY_PRIMARY_OWNER) {
    fprintf(stderr, "cbaseline: cannot own %s\n", service_name);
    dbus_error_free(&error);
    close_connection(s->connection);
    free(s);
    return NULL;
  }
  if (pthread_create(&s->thread, NULL, serve, s) != 0) {
    close_connection(s->connection);
    free(s);
    return NULL;
  }
  return s;
}

void cbaseline_stop_service(void *handle) {
  struct service *s = handle;
  if (!s) return;
  s->stop = 1;
  pthread_join(s->thread, NULL);
  close_connection(s->connection);
  free(s);
}

static int call_samples(DBusConnection *connection, const char *service_name, const char *path,
                        const char *interface, uint64_t expected, int count, double *samples) {
  const char *name = "bench.state";
  for (int i = 0; i < count; i++) {
    int64_t start = now_ns();
    DBusMessage *call =
        dbus_message_new_method_call(service_name, path, interface, "GetState");
    dbus_message_append_args(call, DBUS_TYPE_STRING, &name, DBUS_TYPE_INVALID);
    DBusError error;
    dbus_error_init(&error);
    DBusMessage *reply = dbus_connection_send_with_reply_and_block(connection, call, 5000, &error);
    dbus_message_unref(call);
    uint64_t state = 0;
    if (!reply || !dbus_message_get_args(reply, &error, DBUS_TYPE_UINT64, &state,
                                         DBUS_TYPE_INVALID) || state != expected) {
      dbus_error_free(&error);
      if (reply) dbus_message_unref(reply);
      return -1;
    }
    dbus_message_unref(reply);
    samples[i] = (double)(now_ns() - start) / 1000.0;
  }
  return 0;
}

int cbaseline_call_samples(const char *address, const char *service_name, const char *path,
                           const char *interface, uint64_t expected, int count,
                           double *samples) {
  DBusConnection *connection = open_connection(address);
  if (!connection) return -1;
  int result = call_samples(connection, service_name, path, interface, expected, count, samples);
  close_connection(connection);
  return result;
}

void *cbaseline_client_open(const char *address) { return open_connection(address); }

int cbaseline_client_call_samples(void *client, const char *service_name, const char *path,
                                  const char *interface, uint64_t expected, int count,
                                  double *samples) {
  return call_samples(client, service_name, path, interface, expected, count, samples);
}

void cbaseline_client_close(void *client) { close_connection(client); }
