// The C baseline of the handoff benchmark: what a Linux programmer would write instead of a
// handoff framework. A Maildir in one directory (`tmp/` → `new/`: write, `fdatasync`,
// `rename`, `fsync` of `new/`) watched with inotify (`IN_MOVED_TO`) by a reader in another
// process, which opens, reads and removes each file.
#ifndef NOTIFYBUS_CMAILDIRBASELINE_H
#define NOTIFYBUS_CMAILDIRBASELINE_H

/// Runs the Maildir handoff in `directory` (created; must not exist): `latency` items one at
/// a time, writing each store→read time in microseconds to `samples`, then `throughput`
/// items back to back, writing to `rate` how many per second the reader read (until it read
/// the last). Each item holds the same title and URL as the handoff benchmark's.
/// Returns 0, or -1 on error with `errno` set.
int cmaildir_handoff(
    const char *directory, int latency, int throughput, double *samples, double *rate);

#endif
