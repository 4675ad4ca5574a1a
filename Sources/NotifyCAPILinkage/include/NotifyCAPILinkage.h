// The version string linked into libnotifybus (not exported; see linkage.c).
#ifndef NOTIFYBUS_NOTIFYCAPILINKAGE_H
#define NOTIFYBUS_NOTIFYCAPILINKAGE_H

extern const char notifybus_library_version[];

#endif
