// The C peer of the bridge benchmark: the whole journey of a bridged post written in C
// on libdbus and libmosquitto, with the bridge's architecture (Protocol/bridge.md), the way
// a careful C programmer would write it:
//
//   poster on bus A → dbus-daemon A → bridge A (libdbus match on `Posted` → QoS 1 PUBLISH)
//   → mosquitto → bridge B (PUBLISH → the `Posted` signal on bus B, PUBACK once the bus
//   has it) → dbus-daemon B → a handler on a libdispatch queue
//
// Everything but the buses and the broker runs in the calling process, as the benchmark
// runs both notifyds: each bridge has a D-Bus thread and an MQTT thread, the handler a
// D-Bus thread and a serial dispatch queue.
#ifndef NOTIFYBUS_CBRIDGEBASELINE_H
#define NOTIFYBUS_CBRIDGEBASELINE_H

/// Starts the journey: bridges A (on `bus_a`) and B (on `bus_b`), both on the broker at
/// `host`:`port` carrying the namespace `bench.cbridge`, a poster on each bus and a handler
/// of `bench.cbridge.hop` on bus B; returns once a post on A has reached the handler (30 s
/// at most). Returns a handle for the functions below, or NULL on error (standard error
/// says why).
void *cbridge_open(const char *bus_a, const char *bus_b, const char *host, int port);

/// Posts `bench.cbridge.hop` on bus A `count` times, one at a time, each after the handler
/// ran for the previous one, and writes each post → handler time in microseconds to
/// `samples`. Returns 0, or -1 on error or when a post is not handled within 10 s.
int cbridge_hop_samples(void *journey, int count, double *samples);

/// The same posts made on bus B itself (the same handler): the local post the hop contains.
int cbridge_local_samples(void *journey, int count, double *samples);

/// Posts `count` names on bus A as fast as the bus takes them and returns how many the
/// handler's connection received per second, or a negative value on error.
double cbridge_hop_rate(void *journey, int count);

/// Stops and frees everything cbridge_open started.
void cbridge_close(void *journey);

#endif
