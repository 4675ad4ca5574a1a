// The C baseline for notifybus-bench: the same measurements as the Swift benchmarks,
// written directly against libdbus the way a careful C programmer would.
#ifndef NOTIFYBUS_CBASELINE_H
#define NOTIFYBUS_CBASELINE_H

#include <stdint.h>

/// Measures one-way signal latency between two private connections to the bus at
/// `address`: `count` signals, one at a time, each carrying its send time; writes each
/// latency in microseconds to `samples`. Returns 0, or -1 on error.
int cbaseline_latency(const char *address, int count, double *samples);

/// Two connections to `address` (a receiver of the ticks and a sender), kept open between
/// blocks of cbaseline_latency_block; NULL on error. Close with cbaseline_latency_close.
void *cbaseline_latency_open(const char *address);

/// cbaseline_latency's `count` ticks on `session`'s connections (sequences from 0): 0, or -1
/// when a tick was lost.
int cbaseline_latency_block(void *session, int count, double *samples);

/// Closes a session from cbaseline_latency_open.
void cbaseline_latency_close(void *session);

/// Like cbaseline_latency, but each signal's handler runs on a libdispatch serial queue
/// (the receiving thread queues it with dispatch_async_f), as a C program with dispatch
/// handlers written on libdbus would: the delivery contract of notify_register_dispatch.
int cbaseline_dispatch_latency(const char *address, int count, double *samples);

/// Measures 1 -> 1 signal throughput: one connection sends `count` signals as fast as
/// the bus takes them (flushing when more than 256 KiB is queued), another receives
/// them. Returns signals per second, or a negative value on error.
double cbaseline_throughput(const char *address, int count);

/// Connects to `address`, adds a match rule for `interface`, prints "ready" on standard
/// output, then receives `count` signals of that interface. Returns the CLOCK_MONOTONIC
/// time in nanoseconds of the last one, or -1 on error or after 60 s.
long long cbaseline_receive(const char *address, const char *interface, int count);

/// Sends `count` `Tick` signals on `interface` as fast as the bus takes them (flushing
/// above 256 KiB queued), then flushes. Returns 0, or -1 on error.
int cbaseline_send(const char *address, const char *interface, int count);

/// Serves `org.notifybus.CBaseline.GetState(s name) -> t` at /org/notifybus/CBaseline as
/// `service_name` on a private connection to `address`, answering from a small table (the
/// name "bench.state" holds 42), on a new thread. Returns a handle for
/// cbaseline_stop_service, or NULL on error.
void *cbaseline_start_service(const char *address, const char *service_name);

/// Stops a service started by cbaseline_start_service and frees it.
void cbaseline_stop_service(void *handle);

/// Times `count` blocking GetState("bench.state") calls to `service_name` at `path` and
/// `interface` on a new private connection, writing each round trip in microseconds to
/// `samples`. Returns 0, or -1 on error or an answer other than `expected`.
int cbaseline_call_samples(const char *address, const char *service_name, const char *path,
                           const char *interface, uint64_t expected, int count,
                           double *samples);

/// A private connection to `address` for cbaseline_client_call_samples, kept open between
/// blocks of calls; NULL on error. Close it with cbaseline_client_close.
void *cbaseline_client_open(const char *address);

/// cbaseline_call_samples on `client` (from cbaseline_client_open) instead of a new
/// connection.
int cbaseline_client_call_samples(void *client, const char *service_name, const char *path,
                                  const char *interface, uint64_t expected, int count,
                                  double *samples);

/// Closes a connection from cbaseline_client_open.
void cbaseline_client_close(void *client);

#endif
