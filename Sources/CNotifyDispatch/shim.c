#include "CNotifyDispatch.h"

// libdispatch's own declarations take dispatch_object_t, a transparent union of object
// pointers that is passed exactly as a pointer; declaring them here keeps this file free
// of the toolchain's dispatch headers and of -fblocks.
extern void dispatch_retain(void *object);
extern void dispatch_release(void *object);

void notifybus_dispatch_retain(void *object) { dispatch_retain(object); }

void notifybus_dispatch_release(void *object) { dispatch_release(object); }
