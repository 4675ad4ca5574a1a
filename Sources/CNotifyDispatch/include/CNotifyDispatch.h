// What the C library (NotifyCAPI) needs from libdispatch that Swift cannot call:
// retaining and releasing a C caller's dispatch queue (Swift marks dispatch_retain and
// dispatch_release unavailable, as ARC would manage them).
#ifndef NOTIFYBUS_CNOTIFYDISPATCH_H
#define NOTIFYBUS_CNOTIFYDISPATCH_H

/// Takes a reference to a dispatch object (a dispatch_queue_t).
void notifybus_dispatch_retain(void *object);

/// Gives back a reference taken by notifybus_dispatch_retain.
void notifybus_dispatch_release(void *object);

#endif
