// The C surface NotifyBus uses from libdbus-1, plus what Swift cannot import directly.
//
// libdbus defines its type codes as cast macros (`#define DBUS_TYPE_STRING ((int) 's')`),
// which Swift does not import. They are re-exported here as constants with the `CDBus_`
// prefix. Nothing but the `DBus` Swift module may import this module.
#ifndef NOTIFYBUS_CDBUS_SHIM_H
#define NOTIFYBUS_CDBUS_SHIM_H

#include <dbus/dbus.h>

static const int CDBus_TYPE_INVALID = DBUS_TYPE_INVALID;
static const int CDBus_TYPE_BYTE = DBUS_TYPE_BYTE;
static const int CDBus_TYPE_BOOLEAN = DBUS_TYPE_BOOLEAN;
static const int CDBus_TYPE_INT16 = DBUS_TYPE_INT16;
static const int CDBus_TYPE_UINT16 = DBUS_TYPE_UINT16;
static const int CDBus_TYPE_INT32 = DBUS_TYPE_INT32;
static const int CDBus_TYPE_UINT32 = DBUS_TYPE_UINT32;
static const int CDBus_TYPE_INT64 = DBUS_TYPE_INT64;
static const int CDBus_TYPE_UINT64 = DBUS_TYPE_UINT64;
static const int CDBus_TYPE_DOUBLE = DBUS_TYPE_DOUBLE;
static const int CDBus_TYPE_STRING = DBUS_TYPE_STRING;
static const int CDBus_TYPE_OBJECT_PATH = DBUS_TYPE_OBJECT_PATH;
static const int CDBus_TYPE_SIGNATURE = DBUS_TYPE_SIGNATURE;
static const int CDBus_TYPE_UNIX_FD = DBUS_TYPE_UNIX_FD;
static const int CDBus_TYPE_ARRAY = DBUS_TYPE_ARRAY;
static const int CDBus_TYPE_VARIANT = DBUS_TYPE_VARIANT;
static const int CDBus_TYPE_STRUCT = DBUS_TYPE_STRUCT;
static const int CDBus_TYPE_DICT_ENTRY = DBUS_TYPE_DICT_ENTRY;

/// Appends a string-like basic value (`s`, `o` or `g`) without Swift having to build a
/// pointer to a pointer.
static inline dbus_bool_t CDBus_iter_append_string(DBusMessageIter *iter, int type,
                                                   const char *value) {
  return dbus_message_iter_append_basic(iter, type, &value);
}

/// Reads a string-like basic value (`s`, `o` or `g`) at the iterator.
static inline const char *CDBus_iter_get_string(DBusMessageIter *iter) {
  const char *value = NULL;
  dbus_message_iter_get_basic(iter, &value);
  return value;
}

/// Appends a byte array (`ay`) in one call.
static inline dbus_bool_t CDBus_iter_append_bytes(DBusMessageIter *iter,
                                                  const unsigned char *bytes, int count) {
  return dbus_message_iter_append_fixed_array(iter, DBUS_TYPE_BYTE, &bytes, count);
}

/// Reads a byte array (`ay`) in one call; `iter` must be the array's sub-iterator.
static inline const unsigned char *CDBus_iter_get_bytes(DBusMessageIter *iter, int *count) {
  const unsigned char *bytes = NULL;
  dbus_message_iter_get_fixed_array(iter, &bytes, count);
  return bytes;
}

#endif
