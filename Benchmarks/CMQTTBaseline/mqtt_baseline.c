// See CMQTTBaseline.h.
#define _GNU_SOURCE  // pipe2
#include "CMQTTBaseline.h"

#include <errno.h>
#include <fcntl.h>
#include <mosquitto.h>
#include <mqtt_protocol.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

struct client {
  struct cmqtt_pair *pair;
  struct mosquitto *mqtt;
  pthread_mutex_t io;  // unthreaded: held for every libmosquitto call
  int wake[2];         // unthreaded: wakes the client's thread to write what waits
  pthread_t thread;
  bool started;
};

struct cmqtt_pair {
  bool threaded;
  char topic[256];
  struct client publisher, subscriber;
  _Atomic bool stop;
  pthread_mutex_t lock;  // guards what follows
  pthread_cond_t changed;
  int connected;         // clients whose CONNACK arrived
  bool subscribed;       // the SUBACK arrived
  bool failed;
  long received;
  long long arrived;     // CLOCK_MONOTONIC ns, stamped in the callback of the last message
};

static long long now_ns(void) {
  struct timespec spec;
  clock_gettime(CLOCK_MONOTONIC, &spec);
  return (long long)spec.tv_sec * 1000000000LL + spec.tv_nsec;
}

static void on_connect(struct mosquitto *client, void *object, int reason, int flags,
                       const mosquitto_property *properties) {
  (void)client, (void)flags, (void)properties;
  struct cmqtt_pair *pair = ((struct client *)object)->pair;
  pthread_mutex_lock(&pair->lock);
  if (reason == 0) pair->connected += 1; else pair->failed = true;
  pthread_cond_broadcast(&pair->changed);
  pthread_mutex_unlock(&pair->lock);
}

static void on_subscribe(struct mosquitto *client, void *object, int id, int count,
                         const int *granted, const mosquitto_property *properties) {
  (void)client, (void)id, (void)properties;
  struct cmqtt_pair *pair = ((struct client *)object)->pair;
  pthread_mutex_lock(&pair->lock);
  pair->subscribed = true;
  for (int index = 0; index < count; index++) {
    if (granted[index] >= 0x80) pair->failed = true;
  }
  pthread_cond_broadcast(&pair->changed);
  pthread_mutex_unlock(&pair->lock);
}

static void on_message(struct mosquitto *client, void *object,
                       const struct mosquitto_message *message,
                       const mosquitto_property *properties) {
  (void)client, (void)message, (void)properties;
  long long arrived = now_ns();
  struct cmqtt_pair *pair = ((struct client *)object)->pair;
  pthread_mutex_lock(&pair->lock);
  pair->received += 1;
  pair->arrived = arrived;
  pthread_cond_broadcast(&pair->changed);
  pthread_mutex_unlock(&pair->lock);
}

/// Waits until `*value >= target` or the pair failed, `seconds` at most; 0, or -1.
static int wait_for(struct cmqtt_pair *pair, long *value, long target, int seconds) {
  struct timespec deadline;
  clock_gettime(CLOCK_REALTIME, &deadline);
  deadline.tv_sec += seconds;
  pthread_mutex_lock(&pair->lock);
  while (*value < target && !pair->failed) {
    if (pthread_cond_timedwait(&pair->changed, &pair->lock, &deadline) != 0) break;
  }
  int result = *value >= target && !pair->failed ? 0 : -1;
  pthread_mutex_unlock(&pair->lock);
  return result;
}

static void wake(struct client *client) {
  char byte = 0;
  ssize_t written = write(client->wake[1], &byte, 1);
  (void)written;
}

void cmqtt_close_socket_pair(struct mosquitto *client) {
  int major, minor, revision;
  mosquitto_lib_version(&major, &minor, &revision);
  if (major != 2 || minor != 0) return;
  int *fields = (int *)client;  // struct mosquitto starts: sock, sockpairR, sockpairW
  if (fields[0] != mosquitto_socket(client) || fields[1] < 0 || fields[2] < 0) return;
  for (int index = 1; index <= 2; index++) {
    int domain = 0, type = 0;
    socklen_t length = sizeof domain;
    if (getsockopt(fields[index], SOL_SOCKET, SO_DOMAIN, &domain, &length) != 0
        || domain != AF_UNIX
        || getsockopt(fields[index], SOL_SOCKET, SO_TYPE, &type, &length) != 0
        || type != SOCK_STREAM) {
      return;
    }
  }
  close(fields[1]);
  close(fields[2]);
  fields[1] = fields[2] = -1;
}

/// An unthreaded client's thread: polls the socket and the wake pipe, reads (what the
/// callbacks answer only queued, then written at once after them, so that an arrival is
/// stamped before its PUBACK is written), writes what waits and keeps the connection alive.
static void *client_thread(void *argument) {
  struct client *client = argument;
  int code = MOSQ_ERR_SUCCESS;
  while (!atomic_load(&client->pair->stop) && code == MOSQ_ERR_SUCCESS) {
    pthread_mutex_lock(&client->io);
    int socket = mosquitto_socket(client->mqtt);
    bool wants_write = mosquitto_want_write(client->mqtt);
    pthread_mutex_unlock(&client->io);
    if (socket < 0) break;
    struct pollfd descriptors[2] = {
        {.fd = socket, .events = POLLIN | (wants_write ? POLLOUT : 0)},
        {.fd = client->wake[0], .events = POLLIN},
    };
    if (poll(descriptors, 2, 1000) < 0 && errno != EINTR) break;
    if (descriptors[1].revents) {
      char bytes[64];
      ssize_t drained = read(client->wake[0], bytes, sizeof bytes);
      (void)drained;
    }
    pthread_mutex_lock(&client->io);
    if (descriptors[0].revents & (POLLIN | POLLERR | POLLHUP)) {
      mosquitto_threaded_set(client->mqtt, true);
      code = mosquitto_loop_read(client->mqtt, 1);
      mosquitto_threaded_set(client->mqtt, false);
    }
    if (code == MOSQ_ERR_SUCCESS && mosquitto_want_write(client->mqtt)) {
      code = mosquitto_loop_write(client->mqtt, 1);
    }
    if (code == MOSQ_ERR_SUCCESS) code = mosquitto_loop_misc(client->mqtt);
    pthread_mutex_unlock(&client->io);
  }
  if (!atomic_load(&client->pair->stop)) {
    pthread_mutex_lock(&client->pair->lock);
    client->pair->failed = true;
    pthread_cond_broadcast(&client->pair->changed);
    pthread_mutex_unlock(&client->pair->lock);
  }
  return NULL;
}

/// Publishes one message: unthreaded, written on this thread (the client's thread writes
/// only what the socket did not take).
static int publish(struct cmqtt_pair *pair) {
  struct client *client = &pair->publisher;
  if (pair->threaded) {
    return mosquitto_publish_v5(client->mqtt, NULL, pair->topic, 1, "1", 1, false, NULL);
  }
  pthread_mutex_lock(&client->io);
  int code = mosquitto_publish_v5(client->mqtt, NULL, pair->topic, 1, "1", 1, false, NULL);
  bool unfinished = code == MOSQ_ERR_SUCCESS && mosquitto_want_write(client->mqtt);
  pthread_mutex_unlock(&client->io);
  if (unfinished) wake(client);
  return code;
}

static int open_client(struct cmqtt_pair *pair, struct client *client, const char *role,
                       const char *host, int port) {
  client->pair = pair;
  pthread_mutex_init(&client->io, NULL);
  client->wake[0] = client->wake[1] = -1;
  char id[64];
  snprintf(id, sizeof id, "cbaseline-%s-%lld", role, now_ns());
  client->mqtt = mosquitto_new(id, true, client);
  if (!client->mqtt) return -1;
  mosquitto_int_option(client->mqtt, MOSQ_OPT_PROTOCOL_VERSION, MQTT_PROTOCOL_V5);
  mosquitto_int_option(client->mqtt, MOSQ_OPT_TCP_NODELAY, 1);
  mosquitto_connect_v5_callback_set(client->mqtt, on_connect);
  mosquitto_subscribe_v5_callback_set(client->mqtt, on_subscribe);
  mosquitto_message_v5_callback_set(client->mqtt, on_message);
  if (mosquitto_connect_bind_v5(client->mqtt, host, port, 30, NULL, NULL) != MOSQ_ERR_SUCCESS) {
    return -1;
  }
  if (pair->threaded) {
    client->started = mosquitto_loop_start(client->mqtt) == MOSQ_ERR_SUCCESS;
    return client->started ? 0 : -1;
  }
  if (pipe2(client->wake, O_CLOEXEC | O_NONBLOCK) != 0) return -1;
  cmqtt_close_socket_pair(client->mqtt);
  client->started = pthread_create(&client->thread, NULL, client_thread, client) == 0;
  if (client->started) {
    char name[16];
    snprintf(name, sizeof name, "cmqtt-%s", role);
    pthread_setname_np(client->thread, name);
  }
  return client->started ? 0 : -1;
}

static void close_client(struct cmqtt_pair *pair, struct client *client) {
  if (!client->pair) return;
  if (client->started && pair->threaded) {
    mosquitto_disconnect(client->mqtt);
    mosquitto_loop_stop(client->mqtt, false);
  } else if (client->started) {
    wake(client);
    pthread_join(client->thread, NULL);
  }
  if (client->mqtt) {
    if (!pair->threaded) mosquitto_disconnect(client->mqtt);
    mosquitto_destroy(client->mqtt);
  }
  for (int index = 0; index < 2; index++) {
    if (client->wake[index] >= 0) close(client->wake[index]);
  }
  pthread_mutex_destroy(&client->io);
}

void cmqtt_close(cmqtt_pair *pair) {
  if (!pair) return;
  atomic_store(&pair->stop, true);
  close_client(pair, &pair->publisher);
  close_client(pair, &pair->subscriber);
  pthread_cond_destroy(&pair->changed);
  pthread_mutex_destroy(&pair->lock);
  free(pair);
}

cmqtt_pair *cmqtt_open(const char *host, int port, const char *topic, int threaded) {
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once(&once, (void (*)(void))mosquitto_lib_init);
  struct cmqtt_pair *pair = calloc(1, sizeof *pair);
  if (!pair) return NULL;
  pair->threaded = threaded != 0;
  snprintf(pair->topic, sizeof pair->topic, "%s", topic);
  pthread_mutex_init(&pair->lock, NULL);
  pthread_cond_init(&pair->changed, NULL);
  if (open_client(pair, &pair->publisher, "pub", host, port) != 0
      || open_client(pair, &pair->subscriber, "sub", host, port) != 0) {
    cmqtt_close(pair);
    return NULL;
  }
  pthread_mutex_lock(&pair->lock);
  struct timespec deadline;
  clock_gettime(CLOCK_REALTIME, &deadline);
  deadline.tv_sec += 30;
  while (pair->connected < 2 && !pair->failed) {
    if (pthread_cond_timedwait(&pair->changed, &pair->lock, &deadline) != 0) break;
  }
  bool connected = pair->connected == 2 && !pair->failed;
  pthread_mutex_unlock(&pair->lock);
  struct client *subscriber = &pair->subscriber;
  if (!pair->threaded) pthread_mutex_lock(&subscriber->io);
  int code = connected ? mosquitto_subscribe_v5(subscriber->mqtt, NULL, pair->topic, 1, 0, NULL)
                       : MOSQ_ERR_NO_CONN;
  if (!pair->threaded) pthread_mutex_unlock(&subscriber->io);
  if (code != MOSQ_ERR_SUCCESS) {
    cmqtt_close(pair);
    return NULL;
  }
  pthread_mutex_lock(&pair->lock);
  clock_gettime(CLOCK_REALTIME, &deadline);
  deadline.tv_sec += 30;
  while (!pair->subscribed && !pair->failed) {
    if (pthread_cond_timedwait(&pair->changed, &pair->lock, &deadline) != 0) break;
  }
  bool ready = pair->subscribed && !pair->failed;
  pthread_mutex_unlock(&pair->lock);
  if (!ready) {
    cmqtt_close(pair);
    return NULL;
  }
  return pair;
}

int cmqtt_hop_samples(cmqtt_pair *pair, int count, double *samples) {
  pthread_mutex_lock(&pair->lock);
  long received = pair->received;
  pthread_mutex_unlock(&pair->lock);
  for (int index = 0; index < count; index++) {
    long long before = now_ns();
    if (publish(pair) != MOSQ_ERR_SUCCESS) return -1;
    if (wait_for(pair, &pair->received, received + index + 1, 10) != 0) return -1;
    // Threaded, as such a program reads it: once the callback has woken this thread.
    long long after = now_ns();
    if (!pair->threaded) {
      pthread_mutex_lock(&pair->lock);
      after = pair->arrived;
      pthread_mutex_unlock(&pair->lock);
    }
    samples[index] = (double)(after - before) / 1000.0;
  }
  return 0;
}

double cmqtt_hop_rate(cmqtt_pair *pair, int count) {
  pthread_mutex_lock(&pair->lock);
  long received = pair->received;
  pthread_mutex_unlock(&pair->lock);
  long long start = now_ns();
  for (int index = 0; index < count; index++) {
    if (publish(pair) != MOSQ_ERR_SUCCESS) return -1;
  }
  if (wait_for(pair, &pair->received, received + count, 120) != 0) return -1;
  pthread_mutex_lock(&pair->lock);
  long long end = pair->arrived;
  pthread_mutex_unlock(&pair->lock);
  return count / ((double)(end - start) / 1e9);
}
