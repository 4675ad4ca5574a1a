/*
 * notify_private.h: the part of Darwin's notify SPI that has a meaning on Linux.
 * See notify_private(3).
 *
 * Left out, because nothing on Linux gives them a meaning: notify_suspend_pid and
 * notify_resume_pid (root-only control of other processes), notify_get_event (a
 * deprecated no-op) and _notify_fork_child (libSystem's fork hook; NotifyBus installs
 * its own with pthread_atfork).
 */
#ifndef NOTIFYBUS_NOTIFY_PRIVATE_H
#define NOTIFYBUS_NOTIFY_PRIVATE_H

#include <stdint.h>
#include <sys/types.h>

/* Options for notify_set_options. DISPATCH, REGEN, FILTERED and OLD_IPC are accepted
   and change nothing: NotifyBus always multiplexes a process's registrations over one
   bus connection and always registers again after the bus restarts. */
#define NOTIFY_OPT_DISPATCH 0x00000001
#define NOTIFY_OPT_REGEN 0x00000002
#define NOTIFY_OPT_FILTERED 0x00000004
#define NOTIFY_OPT_OLD_IPC 0x00000008
#define NOTIFY_OPT_ENABLE 0x04000000  /* undoes NOTIFY_OPT_DISABLE */
#define NOTIFY_OPT_DISABLE 0x08000000 /* every call returns NOTIFY_STATUS_OPT_DISABLE */

/* Darwin's per-call flag of notify_register_mach_port; accepted and meaningless here. */
#define NOTIFY_NO_DISPATCH 0x80000000

/* The counterpart of Darwin's com.apple.system.notify.ipc_version: notifyd keeps this
   name's state at (pid << 32) | protocol version (1), and only notifyd may set it. */
#define NOTIFYBUS_SERVER_VERSION_NAME "org.notifybus.notifyd.version"

#ifdef __cplusplus
extern "C" {
#endif

/* Sets library options; see above. */
extern void notify_set_options(uint32_t opts);

/* A check-style registration, polled with notify_check. */
extern uint32_t notify_register_plain(const char *name, int *out_token);

/* The raw post counter of a check or self. registration: 1 at registration, plus one per
   post that reached it (modulo 2^32). Other tokens: NOTIFY_STATUS_INVALID_REQUEST. */
extern uint32_t notify_peek(int token, uint32_t *val);

/* Delivers the token's name to that token each time path is created, written, renamed,
   deleted or has its attributes changed (inotify; events within 100 ms are one
   delivery). The directory must exist. One path per token; flags are ignored. */
extern uint32_t notify_monitor_file(int token, char *path, int flags);

/* Writes a status report of this process's registrations and of notifyd's names to
   filepath (created with mode 0600; a symbolic link there is refused). */
extern uint32_t notify_dump_status(const char *filepath);

/* Deprecated on Darwin: the same as notify_post. */
extern uint32_t notify_simple_post(const char *name);

#ifdef __cplusplus
}
#endif

#endif /* NOTIFYBUS_NOTIFY_PRIVATE_H */
