#include "CSDBusBaseline.h"

#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-bus.h>
#include <time.h>

#define BENCH_INTERFACE "org.notifybus.Bench"
#define BENCH_PATH "/org/notifybus/Bench"
#define SERVICE_INTERFACE "org.notifybus.CBaseline"
#define SERVICE_PATH "/org/notifybus/CBaseline"

static int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

// A bus client connection to `address`, with its Hello answered.
static sd_bus *open_bus(const char *address) {
  sd_bus *bus = NULL;
  int r = sd_bus_new(&bus);
  if (r >= 0) r = sd_bus_set_address(bus, address);
  if (r >= 0) r = sd_bus_set_bus_client(bus, 1);
  if (r >= 0) r = sd_bus_start(bus);
  // Hello's reply makes the connection ready; until then the bus knows no unique name.
  while (r >= 0 && sd_bus_is_ready(bus) == 0) {
    r = sd_bus_process(bus, NULL);
    if (r == 0) r = sd_bus_wait(bus, 1000000);
  }
  if (r < 0) {
    fprintf(stderr, "csdbus: cannot connect to %s: %s\n", address, strerror(-r));
    sd_bus_flush_close_unref(bus);
    return NULL;
  }
  return bus;
}

struct receiver {
  sd_bus *bus;
  sd_bus_slot *match;
  int expected;
  int received;
  double *samples;  // latency mode: one per signal
  sem_t arrived;    // latency mode: posted per signal
  int64_t last_ns;  // throughput mode: time of the last signal
  volatile int stop;
};

static int on_tick(sd_bus_message *message, void *userdata, sd_bus_error *error) {
  (void)error;
  struct receiver *r = userdata;
  const char *name;
  uint64_t sequence, sent;
  if (sd_bus_message_read(message, "stt", &name, &sequence, &sent) < 0) return 0;
  int64_t now = now_ns();
  if (r->samples && sequence < (uint64_t)r->expected)
    r->samples[sequence] = (double)(now - (int64_t)sent) / 1000.0;
  r->received++;
  r->last_ns = now;
  if (r->samples) sem_post(&r->arrived);
  return 0;
}

static void *receive(void *argument) {
  struct receiver *r = argument;
  int64_t deadline = now_ns() + 60 * (int64_t)1000000000;
  while (!r->stop && r->received < r->expected && now_ns() < deadline) {
    int result = sd_bus_process(r->bus, NULL);
    if (result < 0) break;
    if (result > 0) continue;
    result = sd_bus_wait(r->bus, 100000);
    if (result < 0 && result != -EINTR) break;
  }
  return NULL;
}

static int start_receiver(struct receiver *r, const char *address, pthread_t *thread) {
  r->bus = open_bus(address);
  if (!r->bus) return -1;
  if (sd_bus_add_match(r->bus, &r->match, "type='signal',interface='" BENCH_INTERFACE "'",
                       on_tick, r) < 0) {
    sd_bus_flush_close_unref(r->bus);
    return -1;
  }
  return pthread_create(thread, NULL, receive, r);
}

static void stop_receiver(struct receiver *r, pthread_t thread) {
  r->stop = 1;
  pthread_join(thread, NULL);
  sd_bus_slot_unref(r->match);
  sd_bus_flush_close_unref(r->bus);
}

static int emit_tick(sd_bus *bus, uint64_t sequence) {
  return sd_bus_emit_signal(bus, BENCH_PATH, BENCH_INTERFACE, "Tick", "stt", "bench", sequence,
                            (uint64_t)now_ns());
}

int csdbus_latency(const char *address, int count, double *samples) {
  struct receiver r = {.expected = count, .samples = samples};
  sem_init(&r.arrived, 0, 0);
  pthread_t thread;
  if (start_receiver(&r, address, &thread) != 0) return -1;
  sd_bus *sender = open_bus(address);
  int result = sender ? 0 : -1;
  for (int i = 0; result == 0 && i < count; i++) {
    if (emit_tick(sender, (uint64_t)i) < 0 || sd_bus_flush(sender) < 0) {
      result = -1;
      break;
    }
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += 5;
    if (sem_timedwait(&r.arrived, &deadline) != 0) result = -1;
  }
  stop_receiver(&r, thread);
  sd_bus_flush_close_unref(sender);
  sem_destroy(&r.arrived);
  return result;
}

double csdbus_throughput(const char *address, int count) {
  struct receiver r = {.expected = count};
  pthread_t thread;
  if (start_receiver(&r, address, &thread) != 0) return -1;
  sd_bus *sender = open_bus(address);
  if (!sender) {
    stop_receiver(&r, thread);
    return -1;
  }
  int64_t start = now_ns();
  int failed = 0;
  for (int i = 0; i < count && !failed; i++) {
    failed = emit_tick(sender, (uint64_t)i) < 0;
    uint64_t queued = 0;
    if (!failed && sd_bus_get_n_queued_write(sender, &queued) >= 0 && queued > 2048)
      failed = sd_bus_flush(sender) < 0;
  }
  if (!failed) failed = sd_bus_flush(sender) < 0;
  // The receiver stops by itself after `count` signals or 60 s.
  pthread_join(thread, NULL);
  double seconds = (double)(r.last_ns - start) / 1e9;
  int received = r.received;
  sd_bus_slot_unref(r.match);
  sd_bus_flush_close_unref(r.bus);
  sd_bus_flush_close_unref(sender);
  return !failed && received == count && seconds > 0 ? count / seconds : -1;
}

// MARK: - A method service and its caller

struct service {
  sd_bus *bus;
  sd_bus_slot *object;
  pthread_t thread;
  volatile int stop;
  char names[64][64];
  uint64_t states[64];
  int count;
};

static int get_state(sd_bus_message *message, void *userdata, sd_bus_error *error) {
  (void)error;
  struct service *s = userdata;
  const char *name;
  int r = sd_bus_message_read(message, "s", &name);
  if (r < 0) return r;
  uint64_t state = 0;
  for (int i = 0; i < s->count; i++)
    if (strcmp(s->names[i], name) == 0) state = s->states[i];
  return sd_bus_reply_method_return(message, "t", state);
}

static const sd_bus_vtable service_vtable[] = {
    SD_BUS_VTABLE_START(0),
    SD_BUS_METHOD("GetState", "s", "t", get_state, SD_BUS_VTABLE_UNPRIVILEGED),
    SD_BUS_VTABLE_END,
};

static void *serve(void *argument) {
  struct service *s = argument;
  while (!s->stop) {
    int r = sd_bus_process(s->bus, NULL);
    if (r < 0) break;
    if (r > 0) continue;
    r = sd_bus_wait(s->bus, 50000);
    if (r < 0 && r != -EINTR) break;
  }
  return NULL;
}

void *csdbus_start_service(const char *address, const char *service_name) {
  struct service *s = calloc(1, sizeof *s);
  if (!s) return NULL;
  strcpy(s->names[0], "bench.state");
  s->states[0] = 42;
  s->count = 1;
  s->bus = open_bus(address);
  if (!s->bus) {
    free(s);
    return NULL;
  }
  int r = sd_bus_add_object_vtable(s->bus, &s->object, SERVICE_PATH, SERVICE_INTERFACE,
                                   service_vtable, s);
  if (r >= 0) r = sd_bus_request_name(s->bus, service_name, 0);
  if (r >= 0) r = pthread_create(&s->thread, NULL, serve, s) == 0 ? 0 : -1;
  if (r < 0) {
    fprintf(stderr, "csdbus: cannot serve %s\n", service_name);
    sd_bus_slot_unref(s->object);
    sd_bus_flush_close_unref(s->bus);
    free(s);
    return NULL;
  }
  return s;
}

void csdbus_stop_service(void *handle) {
  struct service *s = handle;
  if (!s) return;
  s->stop = 1;
  pthread_join(s->thread, NULL);
  sd_bus_slot_unref(s->object);
  sd_bus_flush_close_unref(s->bus);
  free(s);
}

int csdbus_call_samples(const char *address, const char *service_name, const char *path,
                        const char *interface, uint64_t expected, int count, double *samples) {
  sd_bus *bus = open_bus(address);
  if (!bus) return -1;
  int result = 0;
  for (int i = 0; i < count; i++) {
    int64_t start = now_ns();
    sd_bus_error error = SD_BUS_ERROR_NULL;
    sd_bus_message *reply = NULL;
    uint64_t state = 0;
    int r = sd_bus_call_method(bus, service_name, path, interface, "GetState", &error, &reply,
                               "s", "bench.state");
    if (r >= 0) r = sd_bus_message_read(reply, "t", &state);
    sd_bus_message_unref(reply);
    sd_bus_error_free(&error);
    if (r < 0 || state != expected) {
      result = -1;
      break;
    }
    samples[i] = (double)(now_ns() - start) / 1000.0;
  }
  sd_bus_flush_close_unref(bus);
  return result;
}
