// The C baseline for notifybus-bench: the same measurements as the Swift benchmarks,
// written directly against libdbus the way a careful C programmer would.
#ifndef NOTIFYBUS_CBASELINE_H
#define NOTIFYBUS_CBASELINE_H

/// Measures one-way signal latency between two private connections to the bus at
/// `address`: `count` signals, one at a time, each carrying its send time; writes each
/// latency in microseconds to `samples`. Returns 0, or -1 on error.
int cbaseline_latency(const char *address, int count, double *samples);

/// Measures 1 -> 1 signal throughput: one connection sends `count` signals as fast as
/// the bus takes them (flushing when more than 256 KiB is queued), another receives
/// them. Returns signals per second, or a negative value on error.
double cbaseline_throughput(const char *address, int count);

#endif
