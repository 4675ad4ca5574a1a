// The C baseline of the bridge benchmark: one MQTT hop between two libmosquitto clients
// (MQTT 5, QoS 1, TCP_NODELAY) through the broker, written the way a careful C programmer
// would: each client driven unthreaded from a thread of its own, every libmosquitto call
// with the client's mutex held, so that a publish is written at once on the calling
// thread, libmosquitto's wake socket pair closed (nothing reads it), and each arrival
// stamped in the subscriber's message callback. The same way notifyd and the C bridge
// drive their clients (Protocol/bridge.md, "libmosquitto").
//
// For comparison, a pair can instead use libmosquitto's threaded loop
// (`mosquitto_loop_start`): a publish only queues the packet and wakes the loop's thread
// through the socket pair, which writes it, and the clock stops on the publishing thread
// once the callback has woken it.
#ifndef NOTIFYBUS_CMQTTBASELINE_H
#define NOTIFYBUS_CMQTTBASELINE_H

struct mosquitto;

/// Closes the socket pair libmosquitto 2.0 writes a byte to for every packet it queues,
/// which only `mosquitto_loop` reads, when `client`'s layout is the one known (2.0, the pair
/// found beside the socket); otherwise does nothing. notifyd closes it the same way
/// (Protocol/bridge.md, "libmosquitto"); the C peers of the bridge benchmark call this.
void cmqtt_close_socket_pair(struct mosquitto *client);

/// A connected publisher and subscriber of one topic.
typedef struct cmqtt_pair cmqtt_pair;

/// Connects both clients to the broker at `host`:`port` and subscribes the second to
/// `topic`; `threaded` nonzero for libmosquitto's threaded loop. NULL on error.
cmqtt_pair *cmqtt_open(const char *host, int port, const char *topic, int threaded);

/// Publishes `count` messages one at a time, each after the subscriber received the
/// previous one, and writes each publish-to-receive time in microseconds to `samples`.
/// Returns 0, or -1 on error or when a message took more than 10 s.
int cmqtt_hop_samples(cmqtt_pair *pair, int count, double *samples);

/// Publishes `count` messages as fast as libmosquitto takes them and returns how many
/// the subscriber received per second (up to the arrival of the last), or a negative
/// value on error.
double cmqtt_hop_rate(cmqtt_pair *pair, int count);

/// Disconnects both clients and frees the pair; NULL is allowed.
void cmqtt_close(cmqtt_pair *pair);

#endif
