// This target carries the linker options that make the `notifybus` product
// libnotifybus.so.1 (see Package.swift): the soname and the version script. They live here,
// not on NotifyCAPI, so that executables linking NotifyCAPI statically (notifybus-bench) do
// not get them. The library's version, for debuggers and `strings`:
#include "NotifyCAPILinkage.h"

const char notifybus_library_version[] = "libnotifybus 1.0.0";
