// See CMQTTBaseline.h.
#include "CMQTTBaseline.h"

#include <mosquitto.h>
#include <mqtt_protocol.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

struct pair {
  struct mosquitto *publisher;
  struct mosquitto *subscriber;
  pthread_mutex_t lock;
  pthread_cond_t changed;
  int connected;   // clients whose CONNACK arrived
  int subscribed;  // 1 once the SUBACK arrived
  long received;
};

static long long now_ns(void) {
  struct timespec spec;
  clock_gettime(CLOCK_MONOTONIC, &spec);
  return (long long)spec.tv_sec * 1000000000LL + spec.tv_nsec;
}

static void on_connect(struct mosquitto *client, void *object, int reason, int flags,
                       const mosquitto_property *properties) {
  (void)client; (void)flags; (void)properties;
  struct pair *pair = object;
  pthread_mutex_lock(&pair->lock);
  if (reason == 0) pair->connected += 1;
  pthread_cond_broadcast(&pair->changed);
  pthread_mutex_unlock(&pair->lock);
}

static void on_subscribe(struct mosquitto *client, void *object, int id, int count,
                         const int *granted, const mosquitto_property *properties) {
  (void)client; (void)id; (void)count; (void)granted; (void)properties;
  struct pair *pair = object;
  pthread_mutex_lock(&pair->lock);
  pair->subscribed = 1;
  pthread_cond_broadcast(&pair->changed);
  pthread_mutex_unlock(&pair->lock);
}

static void on_message(struct mosquitto *client, void *object,
                       const struct mosquitto_message *message,
                       const mosquitto_property *properties) {
  (void)client; (void)message; (void)properties;
  struct pair *pair = object;
  pthread_mutex_lock(&pair->lock);
  pair->received += 1;
  pthread_cond_broadcast(&pair->changed);
  pthread_mutex_unlock(&pair->lock);
}

/// Waits until `*value >= target`, 30 s at most; returns 0, or -1 on time-out.
static int wait_for(struct pair *pair, volatile long *value, long target) {
  struct timespec deadline;
  clock_gettime(CLOCK_REALTIME, &deadline);
  deadline.tv_sec += 30;
  int result = 0;
  pthread_mutex_lock(&pair->lock);
  while (*value < target && result == 0) {
    if (pthread_cond_timedwait(&pair->changed, &pair->lock, &deadline) != 0 && *value < target) {
      result = -1;
    }
  }
  pthread_mutex_unlock(&pair->lock);
  return result;
}

static struct mosquitto *make_client(struct pair *pair, const char *id) {
  struct mosquitto *client = mosquitto_new(id, true, pair);
  if (!client) return NULL;
  mosquitto_int_option(client, MOSQ_OPT_PROTOCOL_VERSION, MQTT_PROTOCOL_V5);
  mosquitto_int_option(client, MOSQ_OPT_TCP_NODELAY, 1);
  mosquitto_connect_v5_callback_set(client, on_connect);
  mosquitto_subscribe_v5_callback_set(client, on_subscribe);
  mosquitto_message_v5_callback_set(client, on_message);
  return client;
}

static void close_pair(struct pair *pair) {
  struct mosquitto *clients[2] = {pair->publisher, pair->subscriber};
  for (int index = 0; index < 2; index++) {
    if (!clients[index]) continue;
    mosquitto_disconnect(clients[index]);
    mosquitto_loop_stop(clients[index], false);
    mosquitto_destroy(clients[index]);
  }
  pthread_cond_destroy(&pair->changed);
  pthread_mutex_destroy(&pair->lock);
}

static int open_pair(struct pair *pair, const char *host, int port, const char *topic) {
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once(&once, (void (*)(void))mosquitto_lib_init);
  memset(pair, 0, sizeof *pair);
  pthread_mutex_init(&pair->lock, NULL);
  pthread_cond_init(&pair->changed, NULL);
  char id[64];
  snprintf(id, sizeof id, "cbaseline-pub-%lld", now_ns());
  pair->publisher = make_client(pair, id);
  snprintf(id, sizeof id, "cbaseline-sub-%lld", now_ns());
  pair->subscriber = make_client(pair, id);
  if (!pair->publisher || !pair->subscriber) return -1;
  if (mosquitto_connect_bind_v5(pair->publisher, host, port, 30, NULL, NULL) != MOSQ_ERR_SUCCESS
      || mosquitto_connect_bind_v5(pair->subscriber, host, port, 30, NULL, NULL) != MOSQ_ERR_SUCCESS
      || mosquitto_loop_start(pair->publisher) != MOSQ_ERR_SUCCESS
      || mosquitto_loop_start(pair->subscriber) != MOSQ_ERR_SUCCESS) {
    return -1;
  }
  struct timespec deadline;
  clock_gettime(CLOCK_REALTIME, &deadline);
  deadline.tv_sec += 30;
  pthread_mutex_lock(&pair->lock);
  while (pair->connected < 2) {
    if (pthread_cond_timedwait(&pair->changed, &pair->lock, &deadline) != 0) break;
  }
  int ready = pair->connected == 2;
  pthread_mutex_unlock(&pair->lock);
  if (!ready) return -1;
  if (mosquitto_subscribe_v5(pair->subscriber, NULL, topic, 1, 0, NULL) != MOSQ_ERR_SUCCESS) {
    return -1;
  }
  clock_gettime(CLOCK_REALTIME, &deadline);
  deadline.tv_sec += 30;
  pthread_mutex_lock(&pair->lock);
  while (!pair->subscribed) {
    if (pthread_cond_timedwait(&pair->changed, &pair->lock, &deadline) != 0) break;
  }
  ready = pair->subscribed;
  pthread_mutex_unlock(&pair->lock);
  return ready ? 0 : -1;
}

int cmqtt_hop_samples(const char *host, int port, const char *topic, int count, double *samples) {
  struct pair pair;
  int result = open_pair(&pair, host, port, topic);
  for (int index = 0; result == 0 && index < count; index++) {
    long long before = now_ns();
    if (mosquitto_publish_v5(pair.publisher, NULL, topic, 1, "1", 1, false, NULL)
        != MOSQ_ERR_SUCCESS) {
      result = -1;
      break;
    }
    result = wait_for(&pair, &pair.received, index + 1);
    samples[index] = (double)(now_ns() - before) / 1000.0;
  }
  close_pair(&pair);
  return result;
}

double cmqtt_hop_rate(const char *host, int port, const char *topic, int count) {
  struct pair pair;
  if (open_pair(&pair, host, port, topic) != 0) {
    close_pair(&pair);
    return -1;
  }
  long long start = now_ns();
  for (int index = 0; index < count; index++) {
    if (mosquitto_publish_v5(pair.publisher, NULL, topic, 1, "1", 1, false, NULL)
        != MOSQ_ERR_SUCCESS) {
      close_pair(&pair);
      return -1;
    }
  }
  int result = wait_for(&pair, &pair.received, count);
  double seconds = (double)(now_ns() - start) / 1e9;
  close_pair(&pair);
  return result == 0 ? count / seconds : -1;
}
