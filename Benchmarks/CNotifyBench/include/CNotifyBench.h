// The C-library side of the notify benchmarks: the measurements of CBaseline's
// cbaseline_latency and cbaseline_throughput, written against notify.h (libnotifybus's
// functions) instead of libdbus.
#ifndef NOTIFYBUS_CNOTIFYBENCH_H
#define NOTIFYBUS_CNOTIFYBENCH_H

/// Points the library at the bus at `address` (NOTIFYBUS_BUS_ADDRESS); call before any
/// other function here.
void cnotify_use_bus(const char *address);

/// Post -> dispatch handler latency: `count` posts of `name`, one at a time, each waited
/// for; writes each latency in microseconds to `samples`. Returns 0, or -1 on error.
int cnotify_latency(const char *name, int count, double *samples);

/// Post -> file-descriptor latency: as cnotify_latency, but the poster reads the token from
/// a notify_register_file_descriptor pipe, the way CBaseline's receiving thread reads its
/// socket (no dispatch queue in between).
int cnotify_fd_latency(const char *name, int count, double *samples);

/// Posts per second: `count` posts of `name` as fast as the library takes them, received by
/// a check registration of this process (notify_peek counts them). Returns posts per second,
/// or a negative value on error or when not every post arrived within 60 s.
double cnotify_throughput(const char *name, int count);

/// `count` parallel rounds of {register_check, cancel, register_dispatch, cancel, post} on
/// `name` (libnotify.md's parallel_register_cancel). Returns the number of calls that did
/// not return NOTIFY_STATUS_OK, and the wall time in seconds through `seconds`.
int cnotify_parallel_rounds(const char *name, int count, double *seconds);

#endif
