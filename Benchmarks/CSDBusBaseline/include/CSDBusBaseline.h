// The second C peer for notifybus-bench: CBaseline's measurements written against
// systemd's sd-bus (libsystemd), the fastest C D-Bus client on Linux, the way a careful C
// programmer would. Linked into the benchmark only, never into a library.
#ifndef NOTIFYBUS_CSDBUSBASELINE_H
#define NOTIFYBUS_CSDBUSBASELINE_H

#include <stdint.h>

/// Measures one-way signal latency between two sd-bus connections to the bus at `address`:
/// `count` `org.notifybus.Bench.Tick` signals, one at a time, each carrying its send time;
/// writes each latency in microseconds to `samples`. Returns 0, or -1 on error.
int csdbus_latency(const char *address, int count, double *samples);

/// Measures 1 -> 1 signal throughput: one connection sends `count` signals as fast as the
/// bus takes them (flushing when more than 2,048 messages are queued, about the 256 KiB
/// CBaseline flushes at), another receives them. Returns signals per second, or a negative
/// value on error.
double csdbus_throughput(const char *address, int count);

/// Serves `org.notifybus.CBaseline.GetState(s name) -> t` at /org/notifybus/CBaseline as
/// `service_name` (an sd-bus object vtable) on a new thread, answering from the same small
/// table as cbaseline_start_service. Returns a handle for csdbus_stop_service, or NULL.
void *csdbus_start_service(const char *address, const char *service_name);

/// Stops a service started by csdbus_start_service and frees it.
void csdbus_stop_service(void *handle);

/// Times `count` blocking GetState("bench.state") calls (sd_bus_call_method) to
/// `service_name` at `path` and `interface` on a new connection, writing each round trip in
/// microseconds to `samples`. Returns 0, or -1 on error or an answer other than `expected`.
int csdbus_call_samples(const char *address, const char *service_name, const char *path,
                        const char *interface, uint64_t expected, int count, double *samples);

#endif
