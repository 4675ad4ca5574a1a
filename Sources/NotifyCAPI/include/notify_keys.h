/*
 * notify_keys.h: the well-known notification names of Darwin's <notify_keys.h>.
 *
 * On Darwin system services post these. On Linux nothing posts them unless a service
 * is written to (`com.apple.system.` names may be posted only by root where notifyd's
 * access rules say so, see notifyd(8)); they are here so that code watching them
 * compiles and can be driven by a Linux counterpart, or by `notifyutil -p`.
 */
#ifndef NOTIFYBUS_NOTIFY_KEYS_H
#define NOTIFYBUS_NOTIFY_KEYS_H

/* Directory-service caches to invalidate (Linux: name-service caches, nscd, sssd). */
#define kNotifyDSCacheInvalidation "com.apple.system.DirectoryService.InvalidateCache"
#define kNotifyDSCacheInvalidationGroup "com.apple.system.DirectoryService.InvalidateCache.group"
#define kNotifyDSCacheInvalidationHost "com.apple.system.DirectoryService.InvalidateCache.host"
#define kNotifyDSCacheInvalidationService "com.apple.system.DirectoryService.InvalidateCache.service"
#define kNotifyDSCacheInvalidationUser "com.apple.system.DirectoryService.InvalidateCache.user"

/* File systems mounted, unmounted or changed, and low disk space. */
#define kNotifyVFSMount "com.apple.system.kernel.mount"
#define kNotifyVFSUnmount "com.apple.system.kernel.unmount"
#define kNotifyVFSUpdate "com.apple.system.kernel.mountupdate"
#define kNotifyVFSLowDiskSpace "com.apple.system.lowdiskspace"
#define kNotifyVFSLowDiskSpaceRootFS "com.apple.system.lowdiskspace.system"
#define kNotifyVFSLowDiskSpaceOtherFS "com.apple.system.lowdiskspace.user"

/* Host name and network configuration changed. */
#define kNotifySCHostNameChange "com.apple.system.hostname"
#define kNotifySCNetworkChange "com.apple.system.config.network_change"

/* New messages in the system log. */
#define kNotifyASLDBUpdate "com.apple.system.logger.message"

/* The time zone changed, or the clock was set. */
#define kNotifyTimeZoneChange "com.apple.system.timezone"
#define kNotifyClockSet "com.apple.system.clock_set"

#endif /* NOTIFYBUS_NOTIFY_KEYS_H */
