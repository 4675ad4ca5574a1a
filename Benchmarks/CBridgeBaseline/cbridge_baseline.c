// See CBridgeBaseline.h.
//
// What the C bridge does of Protocol/bridge.md, per post: the topic mapping both ways (the
// escapes, and a received topic accepted only when it is exactly its name's topic), the
// `1` payload, QoS 1 with the `notifybus-origin` and `notifybus-sequence` user properties,
// no-local subscriptions, the own-copy rule (a `Posted` of its own connection is never
// published, it confirms the posts made for the broker), the per-origin duplicate window
// (1024), the echo drop, the `Posted` signal of notify.md (the name's interface, the
// sequence and the name's sequence), and the PUBACK written only once the bus has
// dispatched every post made for the messages read (its own copy came back). Like notifyd,
// it drives libmosquitto unthreaded from its own threads, every call with one mutex held,
// so that the D-Bus thread writes the PUBLISH itself, and it closes libmosquitto's wake
// socket pair, which nothing reads. Left out, as a benchmark peer needs none of it:
// reconnection, the outage queue, state, statistics, TLS and logins.
#define _GNU_SOURCE  // pipe2
#include "CBridgeBaseline.h"

#include <CMQTTBaseline.h>

#include <dbus/dbus.h>
#include <errno.h>
#include <fcntl.h>
#include <mosquitto.h>
#include <mqtt_protocol.h>
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define NOTIFY_PATH "/org/notifybus/Notify1"
#define NOTIFY_MEMBER "Posted"
#define TOPIC_PREFIX "notifybus"
#define NAMESPACE "bench.cbridge"
#define HOP_NAME "bench.cbridge.hop"
#define MAX_NAME 511
#define MAX_TOPIC (sizeof TOPIC_PREFIX + 8 + 3 * MAX_NAME + 1)
#define WINDOW_WORDS 16  // 1024 sequence numbers
#define MAX_ORIGINS 64

// The libdispatch functions the handler uses (see CBaseline: no blocks, no headers).
extern void *dispatch_queue_create(const char *label, void *attributes);
extern void dispatch_async_f(void *queue, void *context, void (*work)(void *));
extern void dispatch_sync_f(void *queue, void *context, void (*work)(void *));
extern void dispatch_release(void *object);

static int64_t now_ns(void) {
  struct timespec spec;
  clock_gettime(CLOCK_MONOTONIC, &spec);
  return (int64_t)spec.tv_sec * 1000000000 + spec.tv_nsec;
}

static void deadline_in(struct timespec *deadline, int seconds) {
  clock_gettime(CLOCK_REALTIME, deadline);
  deadline->tv_sec += seconds;
}

// MARK: - Names, interfaces and topics (notify.md, bridge.md)

static bool valid_utf8(const unsigned char *bytes, size_t length) {
  static const uint32_t least[4] = {0, 0x80, 0x800, 0x10000};
  for (size_t index = 0; index < length;) {
    unsigned char first = bytes[index];
    size_t extra;
    uint32_t value;
    if (first < 0x80) {
      index += 1;
      continue;
    } else if ((first & 0xE0) == 0xC0) {
      extra = 1, value = first & 0x1F;
    } else if ((first & 0xF0) == 0xE0) {
      extra = 2, value = first & 0x0F;
    } else if ((first & 0xF8) == 0xF0) {
      extra = 3, value = first & 0x07;
    } else {
      return false;
    }
    if (length - index <= extra) return false;
    for (size_t k = 1; k <= extra; k++) {
      if ((bytes[index + k] & 0xC0) != 0x80) return false;
      value = value << 6 | (bytes[index + k] & 0x3F);
    }
    if (value < least[extra] || value > 0x10FFFF || (value >= 0xD800 && value <= 0xDFFF))
      return false;
    index += extra + 1;
  }
  return true;
}

/// A name of notify.md: 1 to 511 bytes of UTF-8, no NUL (`length` excludes the end).
static bool valid_name(const char *name, size_t length) {
  return length >= 1 && length <= MAX_NAME && memchr(name, 0, length) == NULL
      && valid_utf8((const unsigned char *)name, length);
}

static uint64_t fnv1a(const char *bytes, size_t length, uint64_t basis) {
  uint64_t hash = basis;
  for (size_t index = 0; index < length; index++) {
    hash ^= (unsigned char)bytes[index];
    hash *= 0x100000001b3ULL;
  }
  return hash;
}

/// The name's D-Bus interface (notify.md, "The interface of a name"); `out` holds 256.
static void interface_of(const char *name, char out[256]) {
  static const char prefix[] = "org.notifybus.Notify1.N.";
  static const char hex[] = "0123456789abcdef";
  char built[sizeof prefix + 3 * MAX_NAME + MAX_NAME];
  size_t used = sizeof prefix - 1;
  memcpy(built, prefix, used);
  size_t length = strlen(name);
  bool piece_start = true, piece_empty = true;
  for (size_t index = 0; index <= length; index++) {
    unsigned char byte = index < length ? (unsigned char)name[index] : '.';
    if (byte == '.') {
      if (piece_empty) built[used++] = '_';
      if (index < length) built[used++] = '.';
      piece_start = piece_empty = true;
      continue;
    }
    bool letter = (byte >= 'a' && byte <= 'z') || (byte >= 'A' && byte <= 'Z');
    bool digit = byte >= '0' && byte <= '9';
    if (letter || (digit && !piece_start)) {
      built[used++] = (char)byte;
    } else {
      built[used++] = '_';
      built[used++] = hex[byte >> 4];
      built[used++] = hex[byte & 15];
    }
    piece_start = piece_empty = false;
  }
  if (used <= 255) {
    memcpy(out, built, used);
    out[used] = 0;
    return;
  }
  uint64_t first = fnv1a(name, length, 0xcbf29ce484222325ULL);
  uint64_t second = fnv1a(name, length, 0xcbf29ce484222325ULL ^ 0x5555555555555555ULL);
  snprintf(out, 256, "org.notifybus.Notify1.H.h%016llx%016llx", (unsigned long long)first,
           (unsigned long long)second);
}

/// Writes `PREFIX/KIND/LEVELS` of `name` to `out` (bridge.md, "Topics"); returns its length.
static size_t topic_of(const char *name, const char *kind, char out[MAX_TOPIC]) {
  static const char hex[] = "0123456789ABCDEF";
  size_t used = (size_t)snprintf(out, MAX_TOPIC, TOPIC_PREFIX "/%s/", kind);
  const unsigned char *bytes = (const unsigned char *)name;
  size_t length = strlen(name);
  for (size_t index = 0; index < length; index++) {
    unsigned char byte = bytes[index];
    bool c1 = byte == 0xC2 && index + 1 < length && bytes[index + 1] >= 0x80
           && bytes[index + 1] <= 0x9F;
    if (byte == '.') {
      out[used++] = '/';
    } else if (c1) {
      for (int k = 0; k < 2; k++) {
        unsigned char escaped = bytes[index + k];
        out[used++] = '%';
        out[used++] = hex[escaped >> 4];
        out[used++] = hex[escaped & 15];
      }
      index += 1;
    } else if (byte == '%' || byte == '/' || byte == '+' || byte == '#' || byte < 0x20
               || byte == 0x7F || (index == 0 && byte == '$')) {
      out[used++] = '%';
      out[used++] = hex[byte >> 4];
      out[used++] = hex[byte & 15];
    } else {
      out[used++] = (char)byte;
    }
  }
  out[used] = 0;
  return used;
}

static int hex_value(char digit) {
  if (digit >= '0' && digit <= '9') return digit - '0';
  if (digit >= 'A' && digit <= 'F') return digit - 'A' + 10;
  return -1;
}

/// The name of a received post topic, into `name` (MAX_NAME + 1 bytes); false unless the
/// topic is exactly that name's topic.
static bool name_of_post_topic(const char *topic, char name[MAX_NAME + 1]) {
  static const char prefix[] = TOPIC_PREFIX "/post/";
  if (strncmp(topic, prefix, sizeof prefix - 1) != 0) return false;
  size_t length = 0;
  for (const char *cursor = topic + sizeof prefix - 1; *cursor; cursor++) {
    if (length == MAX_NAME) return false;
    char byte = *cursor;
    if (byte == '.') return false;
    if (byte == '/') {
      byte = '.';
    } else if (byte == '%') {
      int high = hex_value(cursor[1]), low = high < 0 ? -1 : hex_value(cursor[2]);
      if (low < 0) return false;
      byte = (char)(high << 4 | low);
      cursor += 2;
    }
    name[length++] = byte;
  }
  name[length] = 0;
  if (!valid_name(name, length)) return false;
  char canonical[MAX_TOPIC];
  topic_of(name, "post", canonical);
  return strcmp(canonical, topic) == 0;
}

static bool in_namespace(const char *name) {
  size_t length = sizeof NAMESPACE - 1;
  return strncmp(name, NAMESPACE, length) == 0 && (name[length] == 0 || name[length] == '.');
}

// MARK: - D-Bus connections

static DBusConnection *open_bus(const char *address) {
  DBusError error;
  dbus_error_init(&error);
  DBusConnection *connection = dbus_connection_open_private(address, &error);
  if (connection == NULL || !dbus_bus_register(connection, &error)) {
    fprintf(stderr, "cbridge: %s: %s\n", address, error.message ? error.message : "cannot connect");
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

static void close_bus(DBusConnection *connection) {
  if (!connection) return;
  dbus_connection_close(connection);
  dbus_connection_unref(connection);
}

static bool add_match(DBusConnection *connection, const char *rule) {
  DBusError error;
  dbus_error_init(&error);
  dbus_bus_add_match(connection, rule, &error);
  if (dbus_error_is_set(&error)) {
    fprintf(stderr, "cbridge: AddMatch %s: %s\n", rule, error.message);
    dbus_error_free(&error);
    return false;
  }
  return true;
}

/// A poster's counters (notify.md): its sequence, and its last name's sequence (a poster
/// may start a name's count over when it forgets it; this one remembers one name).
struct poster {
  DBusConnection *bus;
  /// The write end of the pipe that wakes the connection's thread, or -1 when it has none
  /// (each post is then flushed on the posting thread).
  int wake;
  uint64_t sequence;
  char last_name[MAX_NAME + 1];
  uint64_t name_sequence;
};

/// Posts `name` (a `Posted` signal) and writes it out; returns the message's serial, 0 on
/// failure.
static dbus_uint32_t post(struct poster *poster, const char *name) {
  char interface[256];
  interface_of(name, interface);
  DBusMessage *message = dbus_message_new_signal(NOTIFY_PATH, interface, NOTIFY_MEMBER);
  if (!message) return 0;
  if (strcmp(poster->last_name, name) != 0) {
    snprintf(poster->last_name, sizeof poster->last_name, "%s", name);
    poster->name_sequence = 0;
  }
  dbus_uint64_t sequence = ++poster->sequence, name_sequence = ++poster->name_sequence;
  dbus_uint32_t serial = 0;
  if (!dbus_message_append_args(message, DBUS_TYPE_STRING, &name, DBUS_TYPE_UINT64, &sequence,
                                DBUS_TYPE_UINT64, &name_sequence, DBUS_TYPE_INVALID)
      || !dbus_connection_send(poster->bus, message, &serial)) {
    serial = 0;
  }
  dbus_message_unref(message);
  // libdbus wrote the message at once unless another thread held the connection's I/O
  // path (its own thread, reading): then that thread writes it, woken. A flush would read
  // too, taking messages into the queue behind the back of the thread that polls.
  if (poster->wake < 0) {
    dbus_connection_flush(poster->bus);
  } else if (dbus_connection_has_messages_to_send(poster->bus)) {
    char byte = 0;
    ssize_t written = write(poster->wake, &byte, 1);
    (void)written;
  }
  return serial;
}

/// The name of a `Posted` signal as receivers check it (notify.md): the path, the member,
/// a first argument that is a valid name whose interface is the signal's; NULL otherwise.
static const char *posted_name(DBusMessage *message, dbus_uint64_t *name_sequence) {
  if (dbus_message_get_type(message) != DBUS_MESSAGE_TYPE_SIGNAL
      || !dbus_message_has_path(message, NOTIFY_PATH)
      || !dbus_message_has_member(message, NOTIFY_MEMBER)) {
    return NULL;
  }
  DBusMessageIter iterator;
  if (!dbus_message_iter_init(message, &iterator)
      || dbus_message_iter_get_arg_type(&iterator) != DBUS_TYPE_STRING) {
    return NULL;
  }
  const char *name;
  dbus_message_iter_get_basic(&iterator, &name);
  *name_sequence = 0;
  if (dbus_message_iter_next(&iterator)) {
    if (dbus_message_iter_get_arg_type(&iterator) != DBUS_TYPE_UINT64) return NULL;
    if (dbus_message_iter_next(&iterator)
        && dbus_message_iter_get_arg_type(&iterator) == DBUS_TYPE_UINT64) {
      dbus_message_iter_get_basic(&iterator, name_sequence);
    }
  }
  if (!valid_name(name, strlen(name))) return NULL;
  char interface[256];
  interface_of(name, interface);
  const char *actual = dbus_message_get_interface(message);
  return actual && strcmp(actual, interface) == 0 ? name : NULL;
}

/// The watches libdbus asks a connection's thread to poll.
///
/// Read by the pump's thread without a lock, which is safe here and not in general: only
/// the pump's thread sets the watch functions and adds watches (at once, in
/// `dbus_connection_set_watch_functions`); another thread's send can only toggle the write
/// watch (libdbus sets the flag itself, under its connection lock, before calling
/// `watch_toggled`), and a toggle made while the pump polls is covered by the wake pipe
/// those threads write to; watches are removed only when the connection closes, after
/// `bridge_close` and `cbridge_close` have joined the pump's thread. A pump whose
/// connection other threads may close needs the list and the flags under one lock.
struct watches {
  DBusWatch *list[4];
  int count;
};

static dbus_bool_t watch_added(DBusWatch *watch, void *data) {
  struct watches *watches = data;
  if (watches->count == 4) return FALSE;
  watches->list[watches->count++] = watch;
  return TRUE;
}

static void watch_removed(DBusWatch *watch, void *data) {
  struct watches *watches = data;
  for (int index = 0; index < watches->count; index++) {
    if (watches->list[index] == watch) {
      watches->list[index] = watches->list[--watches->count];
      return;
    }
  }
}

static void watch_toggled(DBusWatch *watch, void *data) { (void)watch, (void)data; }

/// A connection's thread: pops each message to `handle`, then polls what libdbus's watches
/// ask for (and `wake`, the read end of a pipe other threads write to when their post waits
/// in the queue, or -1) without holding libdbus's I/O path, so that other threads' sends
/// write at once, and hands libdbus what is ready (dbus_watch_handle: one read, no poll of
/// its own). Returns false once the connection is lost.
static bool pump(DBusConnection *connection, int wake, _Atomic bool *stop,
                 void (*handle)(void *context, DBusMessage *message), void *context) {
  struct watches watches = {.count = 0};
  if (!dbus_connection_set_watch_functions(connection, watch_added, watch_removed, watch_toggled,
                                           &watches, NULL)) {
    return false;
  }
  bool connected = true;
  while (connected && !atomic_load(stop)) {
    DBusMessage *message;
    while ((message = dbus_connection_pop_message(connection)) != NULL) {
      handle(context, message);
      dbus_message_unref(message);
    }
    struct pollfd descriptors[5];
    DBusWatch *polled[4];
    int count = 0;
    for (int index = 0; index < watches.count; index++) {
      DBusWatch *watch = watches.list[index];
      if (!dbus_watch_get_enabled(watch)) continue;
      unsigned flags = dbus_watch_get_flags(watch);
      descriptors[count] = (struct pollfd){
          .fd = dbus_watch_get_unix_fd(watch),
          .events = (flags & DBUS_WATCH_READABLE ? POLLIN : 0)
                  | (flags & DBUS_WATCH_WRITABLE ? POLLOUT : 0),
      };
      polled[count++] = watch;
    }
    descriptors[count] = (struct pollfd){.fd = wake, .events = POLLIN};
    if (poll(descriptors, (nfds_t)(count + (wake >= 0 ? 1 : 0)), 100) <= 0) continue;
    if (wake >= 0 && descriptors[count].revents) {
      char bytes[64];
      ssize_t drained = read(wake, bytes, sizeof bytes);
      (void)drained;
    }
    for (int index = 0; index < count; index++) {
      short ready = descriptors[index].revents;
      if (!ready) continue;
      unsigned flags = (ready & POLLIN ? DBUS_WATCH_READABLE : 0)
                     | (ready & POLLOUT ? DBUS_WATCH_WRITABLE : 0)
                     | (ready & POLLERR ? DBUS_WATCH_ERROR : 0)
                     | (ready & POLLHUP ? DBUS_WATCH_HANGUP : 0);
      dbus_watch_handle(polled[index], flags);
    }
    connected = dbus_connection_get_is_connected(connection);
  }
  dbus_connection_set_watch_functions(connection, NULL, NULL, NULL, NULL, NULL);
  return connected;
}

// MARK: - The duplicate window (bridge.md, "No echo, no loops, once per host")

struct origin_window {
  char origin[33];
  uint64_t highest;
  uint64_t seen[WINDOW_WORDS];  // bit d: highest - d was seen
  int64_t heard;
};

/// Whether the stamp is new (and records it): a sequence seen within the window is not.
static bool first_sight(struct origin_window *windows, const char *origin, uint64_t sequence) {
  struct origin_window *window = NULL, *oldest = &windows[0];
  for (int index = 0; index < MAX_ORIGINS && windows[index].origin[0]; index++) {
    if (strcmp(windows[index].origin, origin) == 0) {
      window = &windows[index];
      break;
    }
    if (windows[index].heard < oldest->heard) oldest = &windows[index];
  }
  if (!window) {
    for (int index = 0; index < MAX_ORIGINS; index++) {
      if (!windows[index].origin[0]) {
        oldest = &windows[index];
        break;
      }
    }
    window = oldest;
    memset(window, 0, sizeof *window);
    snprintf(window->origin, sizeof window->origin, "%s", origin);
  }
  window->heard = now_ns();
  if (sequence > window->highest) {
    uint64_t shift = sequence - window->highest;
    if (shift >= 64 * WINDOW_WORDS) {
      memset(window->seen, 0, sizeof window->seen);
    } else {
      unsigned words = (unsigned)(shift / 64), bits = (unsigned)(shift % 64);
      for (int index = WINDOW_WORDS - 1; index >= 0; index--) {
        int from = index - (int)words;
        uint64_t value = from >= 0 ? window->seen[from] << bits : 0;
        if (bits && from > 0) value |= window->seen[from - 1] >> (64 - bits);
        window->seen[index] = value;
      }
    }
    window->highest = sequence;
    window->seen[0] |= 1;
    return true;
  }
  uint64_t distance = window->highest - sequence;
  if (distance >= 64 * WINDOW_WORDS) return true;
  uint64_t bit = 1ULL << (distance % 64);
  if (window->seen[distance / 64] & bit) return false;
  window->seen[distance / 64] |= bit;
  return true;
}

// MARK: - A bridge

struct bridge {
  struct poster bus;  // its bus connection, and its counters as a poster
  const char *own_name;
  struct mosquitto *mqtt;
  pthread_mutex_t io;  // held for every libmosquitto call
  int wake[2];         // wakes the MQTT thread
  int dbus_wake[2];    // wakes the D-Bus thread
  _Atomic bool stop;
  pthread_t dbus_thread, mqtt_thread;
  bool dbus_started, mqtt_started;
  // With `io` held:
  bool holding;                  // posts made for messages read wait for their own copy
  dbus_uint32_t awaited_serial;  // the last of them
  dbus_uint32_t returned_serial; // the last own copy that came back
  int subscriptions;             // SUBACKs awaited (2 once connected)
  bool ready;                    // connected and subscribed
  bool failed;
  char origin[33];
  uint64_t published;
  struct origin_window windows[MAX_ORIGINS];
  pthread_cond_t changed;
};

static void wake_mqtt(struct bridge *bridge) {
  char byte = 0;
  ssize_t written = write(bridge->wake[1], &byte, 1);
  (void)written;
}

/// Publishes a post of `name` at QoS 1 with the stamp, writing it on this thread unless
/// PUBACKs are held (then libmosquitto only queues it, and the thread that ends the hold
/// writes it).
static void publish_post(struct bridge *bridge, const char *name) {
  char topic[MAX_TOPIC], sequence[24];
  topic_of(name, "post", topic);
  mosquitto_property *properties = NULL;
  pthread_mutex_lock(&bridge->io);
  snprintf(sequence, sizeof sequence, "%llu", (unsigned long long)++bridge->published);
  mosquitto_property_add_string_pair(&properties, MQTT_PROP_USER_PROPERTY, "notifybus-origin",
                                     bridge->origin);
  mosquitto_property_add_string_pair(&properties, MQTT_PROP_USER_PROPERTY, "notifybus-sequence",
                                     sequence);
  bool queue_only = bridge->holding;
  if (queue_only) mosquitto_threaded_set(bridge->mqtt, true);
  int code = mosquitto_publish_v5(bridge->mqtt, NULL, topic, 1, "1", 1, false, properties);
  if (queue_only) mosquitto_threaded_set(bridge->mqtt, false);
  bool unfinished = !queue_only && mosquitto_want_write(bridge->mqtt);
  if (code != MOSQ_ERR_SUCCESS) bridge->failed = true;
  pthread_mutex_unlock(&bridge->io);
  mosquitto_property_free_all(&properties);
  if (unfinished || code != MOSQ_ERR_SUCCESS) wake_mqtt(bridge);
}

/// The bridge's D-Bus thread: publishes the posts of other connections, and takes its own
/// copies as the bus's confirmation, writing the PUBACKs that waited for them.
static void bridge_heard(void *context, DBusMessage *message) {
  struct bridge *bridge = context;
  dbus_uint64_t name_sequence;
  const char *name = posted_name(message, &name_sequence);
  if (!name) return;
  const char *sender = dbus_message_get_sender(message);
  if (sender && strcmp(sender, bridge->own_name) == 0) {
    pthread_mutex_lock(&bridge->io);
    bridge->returned_serial = dbus_message_get_serial(message);
    bool unfinished = false;
    if (bridge->holding && bridge->returned_serial >= bridge->awaited_serial) {
      bridge->holding = false;
      int code = MOSQ_ERR_SUCCESS;
      if (mosquitto_want_write(bridge->mqtt)) code = mosquitto_loop_write(bridge->mqtt, 1);
      unfinished = code != MOSQ_ERR_SUCCESS || mosquitto_want_write(bridge->mqtt);
    }
    pthread_mutex_unlock(&bridge->io);
    if (unfinished) wake_mqtt(bridge);
    return;
  }
  if (in_namespace(name)) publish_post(bridge, name);
}

static void *bridge_dbus_thread(void *argument) {
  struct bridge *bridge = argument;
  if (!pump(bridge->bus.bus, bridge->dbus_wake[0], &bridge->stop, bridge_heard, bridge)) {
    pthread_mutex_lock(&bridge->io);
    bridge->failed = true;
    pthread_mutex_unlock(&bridge->io);
  }
  return NULL;
}

// libmosquitto's callbacks run inside its calls, with `io` held.

static void bridge_connected(struct mosquitto *client, void *object, int reason, int flags,
                             const mosquitto_property *properties) {
  (void)flags, (void)properties;
  struct bridge *bridge = object;
  if (reason != 0) {
    bridge->failed = true;
    pthread_cond_broadcast(&bridge->changed);
    return;
  }
  char filter[MAX_TOPIC];
  for (int index = 0; index < 2; index++) {
    size_t length = topic_of(NAMESPACE, index == 0 ? "post" : "state", filter);
    snprintf(filter + length, sizeof filter - length, "/#");
    if (mosquitto_subscribe_v5(client, NULL, filter, 1, MQTT_SUB_OPT_NO_LOCAL, NULL)
        != MOSQ_ERR_SUCCESS) {
      bridge->failed = true;
    }
  }
  bridge->subscriptions = 2;
}

static void bridge_subscribed(struct mosquitto *client, void *object, int id, int count,
                              const int *granted, const mosquitto_property *properties) {
  (void)client, (void)id, (void)properties;
  struct bridge *bridge = object;
  for (int index = 0; index < count; index++) {
    if (granted[index] >= 0x80) bridge->failed = true;
  }
  if (--bridge->subscriptions == 0) bridge->ready = true;
  pthread_cond_broadcast(&bridge->changed);
}

/// A PUBLISH from the broker (its PUBACK only queued: the MQTT thread reads with
/// libmosquitto's threaded mode on): the post on the bus, or a drop.
static void bridge_received(struct mosquitto *client, void *object,
                            const struct mosquitto_message *message,
                            const mosquitto_property *properties) {
  (void)client;
  struct bridge *bridge = object;
  char name[MAX_NAME + 1];
  if (!name_of_post_topic(message->topic, name) || !in_namespace(name)) return;  // state too
  if (message->payloadlen > 1 || (message->payloadlen == 1 && *(char *)message->payload != '1'))
    return;
  // The stamp: both properties once, or neither.
  char *origin = NULL, *sequence_text = NULL;
  int origins = 0, sequences = 0;
  bool skip = false;
  for (const mosquitto_property *cursor = properties;; skip = true) {
    char *key = NULL, *value = NULL;
    cursor = mosquitto_property_read_string_pair(cursor, MQTT_PROP_USER_PROPERTY, &key, &value,
                                                 skip);
    if (!cursor) break;
    if (strcmp(key, "notifybus-origin") == 0 && origins++ == 0) {
      origin = value, value = NULL;
    } else if (strcmp(key, "notifybus-sequence") == 0 && sequences++ == 0) {
      sequence_text = value, value = NULL;
    }
    free(key);
    free(value);
  }
  bool deliver = true;
  if (origins || sequences) {
    char *end = NULL;
    unsigned long long sequence = sequence_text ? strtoull(sequence_text, &end, 10) : 0;
    bool well_formed = origins == 1 && sequences == 1 && strlen(origin) == 32
                    && strspn(origin, "0123456789abcdef") == 32 && sequence > 0 && end
                    && *end == 0 && sequence_text[0] >= '1' && sequence_text[0] <= '9';
    deliver = well_formed && strcmp(origin, bridge->origin) != 0
           && first_sight(bridge->windows, origin, sequence);
  }
  free(origin);
  free(sequence_text);
  if (!deliver) return;
  dbus_uint32_t serial = post(&bridge->bus, name);
  if (serial == 0) {
    bridge->failed = true;
    return;
  }
  bridge->holding = true;
  bridge->awaited_serial = serial;
}

/// The bridge's MQTT thread: polls the socket and the wake pipe, reads (the PUBACKs held
/// until the bus has the posts), writes what waits and keeps the connection alive.
static void *bridge_mqtt_thread(void *argument) {
  struct bridge *bridge = argument;
  while (!atomic_load(&bridge->stop)) {
    pthread_mutex_lock(&bridge->io);
    int socket = mosquitto_socket(bridge->mqtt);
    bool wants_write = mosquitto_want_write(bridge->mqtt) && !bridge->holding;
    pthread_mutex_unlock(&bridge->io);
    if (socket < 0) break;
    struct pollfd descriptors[2] = {
        {.fd = socket, .events = POLLIN | (wants_write ? POLLOUT : 0)},
        {.fd = bridge->wake[0], .events = POLLIN},
    };
    if (poll(descriptors, 2, 1000) < 0 && errno != EINTR) break;
    if (descriptors[1].revents) {
      char bytes[64];
      ssize_t drained = read(bridge->wake[0], bytes, sizeof bytes);
      (void)drained;
    }
    int code = MOSQ_ERR_SUCCESS;
    pthread_mutex_lock(&bridge->io);
    if (descriptors[0].revents & (POLLIN | POLLERR | POLLHUP)) {
      mosquitto_threaded_set(bridge->mqtt, true);
      code = mosquitto_loop_read(bridge->mqtt, 1);
      mosquitto_threaded_set(bridge->mqtt, false);
    }
    if (bridge->holding && bridge->returned_serial >= bridge->awaited_serial) {
      bridge->holding = false;
    }
    if (code == MOSQ_ERR_SUCCESS && !bridge->holding) {
      if (mosquitto_want_write(bridge->mqtt)) code = mosquitto_loop_write(bridge->mqtt, 1);
      if (code == MOSQ_ERR_SUCCESS) code = mosquitto_loop_misc(bridge->mqtt);
    }
    if (code != MOSQ_ERR_SUCCESS) bridge->failed = true;
    pthread_mutex_unlock(&bridge->io);
    if (code != MOSQ_ERR_SUCCESS) break;
  }
  return NULL;
}

static void bridge_close(struct bridge *bridge) {
  if (!bridge) return;
  atomic_store(&bridge->stop, true);
  if (bridge->wake[1] >= 0) wake_mqtt(bridge);
  if (bridge->dbus_wake[1] >= 0) {
    char byte = 0;
    ssize_t written = write(bridge->dbus_wake[1], &byte, 1);
    (void)written;
  }
  if (bridge->mqtt_started) pthread_join(bridge->mqtt_thread, NULL);
  if (bridge->dbus_started) pthread_join(bridge->dbus_thread, NULL);
  if (bridge->mqtt) {
    mosquitto_disconnect_v5(bridge->mqtt, 0, NULL);
    mosquitto_destroy(bridge->mqtt);
  }
  close_bus(bridge->bus.bus);
  for (int index = 0; index < 2; index++) {
    if (bridge->wake[index] >= 0) close(bridge->wake[index]);
    if (bridge->dbus_wake[index] >= 0) close(bridge->dbus_wake[index]);
  }
  pthread_cond_destroy(&bridge->changed);
  pthread_mutex_destroy(&bridge->io);
  free(bridge);
}

static struct bridge *bridge_open(const char *bus, const char *host, int port,
                                  const char *label) {
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once(&once, (void (*)(void))mosquitto_lib_init);
  struct bridge *bridge = calloc(1, sizeof *bridge);
  if (!bridge) return NULL;
  pthread_mutex_init(&bridge->io, NULL);
  pthread_cond_init(&bridge->changed, NULL);
  bridge->wake[0] = bridge->wake[1] = bridge->dbus_wake[0] = bridge->dbus_wake[1] = -1;
  bridge->bus.wake = -1;
  unsigned char random[16];
  if (pipe2(bridge->wake, O_CLOEXEC | O_NONBLOCK) != 0
      || pipe2(bridge->dbus_wake, O_CLOEXEC | O_NONBLOCK) != 0
      || getrandom(random, sizeof random, 0) != sizeof random) {
    bridge_close(bridge);
    return NULL;
  }
  for (int index = 0; index < 16; index++) {
    snprintf(bridge->origin + 2 * index, 3, "%02x", random[index]);
  }
  bridge->bus.bus = open_bus(bus);
  if (!bridge->bus.bus
      || !add_match(bridge->bus.bus, "type='signal',member='" NOTIFY_MEMBER "',path='" NOTIFY_PATH
                                     "'")) {
    bridge_close(bridge);
    return NULL;
  }
  bridge->own_name = dbus_bus_get_unique_name(bridge->bus.bus);
  bridge->bus.wake = bridge->dbus_wake[1];
  char id[64];
  snprintf(id, sizeof id, "cbridge-%.16s", bridge->origin);
  bridge->mqtt = mosquitto_new(id, false, bridge);  // clean start off, as notifyd
  if (!bridge->mqtt) {
    bridge_close(bridge);
    return NULL;
  }
  mosquitto_int_option(bridge->mqtt, MOSQ_OPT_PROTOCOL_VERSION, MQTT_PROTOCOL_V5);
  mosquitto_int_option(bridge->mqtt, MOSQ_OPT_TCP_NODELAY, 1);
  mosquitto_connect_v5_callback_set(bridge->mqtt, bridge_connected);
  mosquitto_subscribe_v5_callback_set(bridge->mqtt, bridge_subscribed);
  mosquitto_message_v5_callback_set(bridge->mqtt, bridge_received);
  mosquitto_property *properties = NULL;
  mosquitto_property_add_int32(&properties, MQTT_PROP_SESSION_EXPIRY_INTERVAL, 600);
  int code = mosquitto_connect_bind_v5(bridge->mqtt, host, port, 30, NULL, properties);
  mosquitto_property_free_all(&properties);
  if (code != MOSQ_ERR_SUCCESS) {
    fprintf(stderr, "cbridge: %s:%d: %s\n", host, port, mosquitto_strerror(code));
    bridge_close(bridge);
    return NULL;
  }
  cmqtt_close_socket_pair(bridge->mqtt);
  bridge->mqtt_started = pthread_create(&bridge->mqtt_thread, NULL, bridge_mqtt_thread, bridge) == 0;
  bridge->dbus_started = pthread_create(&bridge->dbus_thread, NULL, bridge_dbus_thread, bridge) == 0;
  // Named for profiles (perf's and top's per-thread views).
  char thread_name[16];
  snprintf(thread_name, sizeof thread_name, "cbridge%s-mqtt", label);
  if (bridge->mqtt_started) pthread_setname_np(bridge->mqtt_thread, thread_name);
  snprintf(thread_name, sizeof thread_name, "cbridge%s-dbus", label);
  if (bridge->dbus_started) pthread_setname_np(bridge->dbus_thread, thread_name);
  struct timespec deadline;
  deadline_in(&deadline, 30);
  pthread_mutex_lock(&bridge->io);
  while (!bridge->ready && !bridge->failed) {
    if (pthread_cond_timedwait(&bridge->changed, &bridge->io, &deadline) != 0) break;
  }
  bool ready = bridge->ready && !bridge->failed;
  pthread_mutex_unlock(&bridge->io);
  if (!ready || !bridge->mqtt_started || !bridge->dbus_started) {
    fprintf(stderr, "cbridge: the bridge on %s did not connect and subscribe\n", bus);
    bridge_close(bridge);
    return NULL;
  }
  return bridge;
}

// MARK: - The handler on bus B, and the journey

struct journey {
  struct bridge *a, *b;
  struct poster poster_a, poster_b;
  DBusConnection *handler;
  pthread_t handler_thread;
  bool handler_started;
  _Atomic bool stop;
  void *queue;
  sem_t handled;
  _Atomic int64_t handled_at;
  // The handler connection's thread only: the last poster's name sequence seen (notify.md's
  // gap check, as a receiver makes it).
  char last_sender[256];
  uint64_t last_name_sequence;
  uint64_t gaps;
  _Atomic long received;
  _Atomic long rate_target;
  _Atomic int64_t rate_end;  // when the handler ran for the last post of a rate run
  sem_t rate_done;
};

static void run_handler(void *argument) {
  struct journey *journey = argument;
  atomic_store(&journey->handled_at, now_ns());
  sem_post(&journey->handled);
}

static void rate_finished(void *argument) {
  struct journey *journey = argument;
  atomic_store(&journey->rate_end, now_ns());
  sem_post(&journey->rate_done);
}

static void handler_heard(void *context, DBusMessage *message) {
  struct journey *journey = context;
  dbus_uint64_t name_sequence;
  const char *name = posted_name(message, &name_sequence);
  if (!name || strcmp(name, HOP_NAME) != 0) return;
  const char *sender = dbus_message_get_sender(message);
  if (sender && name_sequence) {
    if (strcmp(sender, journey->last_sender) == 0) {
      if (name_sequence > journey->last_name_sequence + 1) journey->gaps++;
    } else {
      snprintf(journey->last_sender, sizeof journey->last_sender, "%s", sender);
    }
    journey->last_name_sequence = name_sequence;
  }
  long received = atomic_fetch_add(&journey->received, 1) + 1;
  long target = atomic_load(&journey->rate_target);
  if (target > 0) {
    // The end is stamped in a handler on the queue, as the NotifyBus rate's is.
    if (received == target) dispatch_async_f(journey->queue, journey, rate_finished);
    return;
  }
  dispatch_async_f(journey->queue, journey, run_handler);
}

static void *handler_thread(void *argument) {
  struct journey *journey = argument;
  pump(journey->handler, -1, &journey->stop, handler_heard, journey);
  return NULL;
}

static void nothing(void *argument) { (void)argument; }

void cbridge_close(void *handle) {
  struct journey *journey = handle;
  if (!journey) return;
  atomic_store(&journey->stop, true);
  if (journey->handler_started) pthread_join(journey->handler_thread, NULL);
  // The handlers queued before the thread ended have run once this has.
  if (journey->queue) dispatch_sync_f(journey->queue, NULL, nothing);
  bridge_close(journey->a);
  bridge_close(journey->b);
  close_bus(journey->handler);
  close_bus(journey->poster_a.bus);
  close_bus(journey->poster_b.bus);
  if (journey->queue) dispatch_release(journey->queue);
  sem_destroy(&journey->handled);
  sem_destroy(&journey->rate_done);
  free(journey);
}

/// One post at a time from `poster`, each awaited in the handler.
static int samples_from(struct journey *journey, struct poster *poster, int count,
                        double *samples, int timeout) {
  while (sem_trywait(&journey->handled) == 0) {}
  for (int index = 0; index < count; index++) {
    int64_t before = now_ns();
    if (post(poster, HOP_NAME) == 0) return -1;
    struct timespec deadline;
    deadline_in(&deadline, timeout);
    while (sem_timedwait(&journey->handled, &deadline) != 0) {
      if (errno != EINTR) return -1;
    }
    samples[index] = (double)(atomic_load(&journey->handled_at) - before) / 1000.0;
  }
  return 0;
}

void *cbridge_open(const char *bus_a, const char *bus_b, const char *host, int port) {
  struct journey *journey = calloc(1, sizeof *journey);
  if (!journey) return NULL;
  sem_init(&journey->handled, 0, 0);
  sem_init(&journey->rate_done, 0, 0);
  journey->queue = dispatch_queue_create("org.notifybus.cbridge.handler", NULL);
  journey->a = bridge_open(bus_a, host, port, "A");
  journey->b = journey->a ? bridge_open(bus_b, host, port, "B") : NULL;
  journey->poster_a.wake = journey->poster_b.wake = -1;
  journey->poster_a.bus = open_bus(bus_a);
  journey->poster_b.bus = open_bus(bus_b);
  journey->handler = open_bus(bus_b);
  char interface[256], rule[512];
  interface_of(HOP_NAME, interface);
  snprintf(rule, sizeof rule,
           "type='signal',interface='%s',member='" NOTIFY_MEMBER "',path='" NOTIFY_PATH "'",
           interface);
  if (!journey->b || !journey->poster_a.bus || !journey->poster_b.bus || !journey->handler
      || !add_match(journey->handler, rule)) {
    cbridge_close(journey);
    return NULL;
  }
  journey->handler_started =
      pthread_create(&journey->handler_thread, NULL, handler_thread, journey) == 0;
  if (journey->handler_started) pthread_setname_np(journey->handler_thread, "chandler-dbus");
  // Posts until the handler runs for one: both bridges carry posts.
  int64_t give_up = now_ns() + 30 * (int64_t)1000000000;
  bool carried = false;
  while (journey->handler_started && !carried && now_ns() < give_up) {
    if (post(&journey->poster_a, HOP_NAME) == 0) break;
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_nsec += 50 * 1000000;
    if (deadline.tv_nsec >= 1000000000) deadline.tv_sec += 1, deadline.tv_nsec -= 1000000000;
    carried = sem_timedwait(&journey->handled, &deadline) == 0;
  }
  if (!carried) {
    fprintf(stderr, "cbridge: the C bridges did not carry a post within 30 s\n");
    cbridge_close(journey);
    return NULL;
  }
  // Later copies of the warm-up posts, then a clean count.
  usleep(200 * 1000);
  while (sem_trywait(&journey->handled) == 0) {}
  return journey;
}

int cbridge_hop_samples(void *handle, int count, double *samples) {
  struct journey *journey = handle;
  return samples_from(journey, &journey->poster_a, count, samples, 10);
}

int cbridge_local_samples(void *handle, int count, double *samples) {
  struct journey *journey = handle;
  return samples_from(journey, &journey->poster_b, count, samples, 10);
}

double cbridge_hop_rate(void *handle, int count) {
  struct journey *journey = handle;
  atomic_store(&journey->received, 0);
  atomic_store(&journey->rate_target, count);
  int64_t start = now_ns();
  for (int index = 0; index < count; index++) {
    if (post(&journey->poster_a, HOP_NAME) == 0) return -1;
  }
  struct timespec deadline;
  deadline_in(&deadline, 120);
  int result;
  while ((result = sem_timedwait(&journey->rate_done, &deadline)) != 0 && errno == EINTR) {}
  double seconds = (double)(atomic_load(&journey->rate_end) - start) / 1e9;
  atomic_store(&journey->rate_target, 0);
  if (result != 0) {
    fprintf(stderr, "cbridge: the handler saw %ld of %d posts\n",
            atomic_load(&journey->received), count);
    return -1;
  }
  return count / seconds;
}
