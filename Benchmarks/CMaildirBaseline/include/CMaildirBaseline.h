// The C baseline of the handoff benchmark: what a Linux programmer would write instead of a
// handoff framework. A Maildir in one directory (`tmp/` → `new/`: write, `fdatasync`,
// `rename`, `fsync` of `new/`) watched with inotify (`IN_MOVED_TO`) by a reader in another
// process, which opens, reads and removes each file.
//
// A session keeps its directory and its reader between calls, so that the benchmark can
// alternate short blocks of Maildir items with blocks of NotifyBus shares in one run.
#ifndef NOTIFYBUS_CMAILDIRBASELINE_H
#define NOTIFYBUS_CMAILDIRBASELINE_H

/// A Maildir with its reader process running.
typedef struct cmaildir_session cmaildir_session;

/// Creates `directory` (which must not exist) with `tmp/` and `new/`, watches `new/` and
/// forks the reader, for at most `capacity` items in all.
/// Returns the session, or NULL on error with `errno` set.
cmaildir_session *cmaildir_open(const char *directory, int capacity);

/// Stores `count` items one at a time, each once the reader has read the one before, writing
/// each store→read time in microseconds to `samples` and, when `returned` is not NULL, each
/// store's own time (until the item is durable in `new/`) to `returned`.
/// Returns 0, or -1 on error with `errno` set (also when the session's capacity is used up).
int cmaildir_latency(cmaildir_session *session, int count, double *samples, double *returned);

/// Stores `count` items back to back and waits until the reader has read them all, writing
/// to `seconds` the time from the first store to the last read.
/// Returns 0, or -1 on error with `errno` set.
int cmaildir_throughput(cmaildir_session *session, int count, double *seconds);

/// Stops the reader and frees the session (the directory stays; the caller removes it).
void cmaildir_close(cmaildir_session *session);

#endif
