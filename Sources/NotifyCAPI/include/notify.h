/*
 * notify.h: Darwin's notify(3) C interface, provided on Linux by NotifyBus
 * (libnotifybus.so.1, `pkg-config notifybus`). See notify(3).
 *
 * The declarations match Apple's public <notify.h> one for one (names, argument types
 * and order, status values), so code written for macOS compiles unchanged. Apple's
 * availability annotations are defined away. There are no Mach ports on Linux:
 * mach_port_t is declared so that code calling notify_register_mach_port compiles, and
 * that call always returns NOTIFY_STATUS_INVALID_PORT.
 *
 * notify_register_dispatch and notify_handler_t need blocks (clang -fblocks, or
 * `pkg-config notifybus-dispatch`); without blocks they are left out, and a program
 * using only check, signal and file-descriptor registrations builds with any C
 * compiler.
 */
#ifndef NOTIFYBUS_NOTIFY_H
#define NOTIFYBUS_NOTIFY_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#ifdef __BLOCKS__
#include <dispatch/dispatch.h>
#endif

/* Apple's availability and export annotations carry no meaning here; they are defined
   away so that code written with them compiles. */
#ifndef __OSX_AVAILABLE_STARTING
#define __OSX_AVAILABLE_STARTING(...)
#endif
#ifndef __OSX_AVAILABLE
#define __OSX_AVAILABLE(...)
#endif
#ifndef __IOS_AVAILABLE
#define __IOS_AVAILABLE(...)
#endif
#ifndef __API_AVAILABLE
#define __API_AVAILABLE(...)
#endif
#ifndef API_AVAILABLE
#define API_AVAILABLE(...)
#endif
#ifndef __API_DEPRECATED
#define __API_DEPRECATED(...)
#endif
#ifndef OS_EXPORT
#define OS_EXPORT extern __attribute__((__visibility__("default")))
#endif

#ifndef MACH_PORT_NULL
/* Declared only so that Darwin code compiles; no Mach port ever exists on Linux. */
typedef unsigned int mach_port_t;
#define MACH_PORT_NULL ((mach_port_t)0)
#endif

/* Status codes: every function returns one of these. */
#define NOTIFY_STATUS_OK 0                /* success */
#define NOTIFY_STATUS_INVALID_NAME 1      /* the name is NULL, empty, too long or has a NUL */
#define NOTIFY_STATUS_INVALID_TOKEN 2     /* no live registration has this token */
#define NOTIFY_STATUS_INVALID_PORT 3      /* no Mach port can be used (always, on Linux) */
#define NOTIFY_STATUS_INVALID_FILE 4      /* NULL descriptor pointer, or not made by this library */
#define NOTIFY_STATUS_INVALID_SIGNAL 5    /* the signal number cannot be sent */
#define NOTIFY_STATUS_INVALID_REQUEST 6   /* the call does not apply to this token */
#define NOTIFY_STATUS_NOT_AUTHORIZED 7    /* the caller may not act on the name */
#define NOTIFY_STATUS_OPT_DISABLE 8       /* disabled: notify_set_options, or a fork() child */
#define NOTIFY_STATUS_SERVER_NOT_FOUND 9  /* no bus, or no notifyd for state, answers */
#define NOTIFY_STATUS_NULL_INPUT 10       /* a required pointer is NULL */
#define NOTIFY_STATUS_FAILED 1000000      /* internal failure; the caller may try again */

/* Flag for notify_register_file_descriptor and notify_register_mach_port. */
#define NOTIFY_REUSE 0x00000001

/* A value no registration ever has, for initializing token variables. */
#define NOTIFY_TOKEN_INVALID -1

#ifdef __cplusplus
extern "C" {
#endif

/* Posts a name: every registration of it, in any process on the bus, is told. */
extern uint32_t notify_post(const char *name);

#ifdef __BLOCKS__
/* The handler of a dispatch registration; called with the registration's token. */
typedef void (^notify_handler_t)(int token);

/* Runs handler on queue, asynchronously, each time name is posted. */
extern uint32_t notify_register_dispatch(const char *name, int *out_token,
                                            dispatch_queue_t queue, notify_handler_t handler);
#endif

/* Registers for polling with notify_check. */
extern uint32_t notify_register_check(const char *name, int *out_token);

/* Sends signal sig to this process each time name is posted. */
extern uint32_t notify_register_signal(const char *name, int sig, int *out_token);

/* Mach-port delivery: declared for source compatibility; always NOTIFY_STATUS_INVALID_PORT. */
extern uint32_t notify_register_mach_port(const char *name, mach_port_t *notify_port,
                                             int flags, int *out_token);

/* Writes the token, 4 bytes in network byte order, to a pipe each time name is posted. */
extern uint32_t notify_register_file_descriptor(const char *name, int *notify_fd, int flags,
                                                   int *out_token);

/* Sets *check to 1 if name was posted since the last call (always 1 on the first), else 0. */
extern uint32_t notify_check(int token, int *check);

/* Ends a registration; nothing is delivered for it afterwards. */
extern uint32_t notify_cancel(int token);

/* Pauses delivery; posts meanwhile become one delivery at notify_resume. */
extern uint32_t notify_suspend(int token);

/* Undoes notify_suspend. */
extern uint32_t notify_resume(int token);

/* Sets the 64-bit state of the token's name (held by notifyd); does not post. */
extern uint32_t notify_set_state(int token, uint64_t state64);

/* Reads the 64-bit state of the token's name; 0 until set. */
extern uint32_t notify_get_state(int token, uint64_t *state64);

/* Whether val is a live registration of this process. */
extern bool notify_is_valid_token(int val);

#ifdef __cplusplus
}
#endif

#endif /* NOTIFYBUS_NOTIFY_H */
