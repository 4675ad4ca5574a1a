#ifndef NOTIFYBUS_CSYSTEMSHIM_H
#define NOTIFYBUS_CSYSTEMSHIM_H

// The few Linux interfaces that Glibc's and Musl's Swift modules do not export without
// _GNU_SOURCE. The values come from the C library's own headers, compiled in
// CSystemShim.c, never from constants written down in Swift.

/// `O_PATH`: open a directory as an `*at` anchor with search permission only.
extern const int notifybus_o_path;

/// `renameat2(2)` with `RENAME_NOREPLACE`: fails with `EEXIST` instead of replacing.
///
/// Returns 0, or -1 with `errno` set (`ENOSYS` or `EINVAL` where the kernel or file
/// system lacks it).
int notifybus_rename_noreplace(int from_directory, const char *from, int to_directory,
                               const char *to);

/// `getdents64(2)`: reads directory entries (`struct linux_dirent64`) into `buffer`.
///
/// Returns the number of bytes read (0 at the end), or -1 with `errno` set. Called
/// directly, a listing costs no `fdopendir` (`fstat`, `fcntl`) nor `closedir`.
long notifybus_getdents64(int directory, void *buffer, unsigned long count);

/// The offsets in `struct linux_dirent64` of `d_reclen`, `d_type` and `d_name`.
extern const unsigned long notifybus_dirent64_reclen_offset;
extern const unsigned long notifybus_dirent64_type_offset;
extern const unsigned long notifybus_dirent64_name_offset;

#endif
