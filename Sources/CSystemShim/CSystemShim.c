#define _GNU_SOURCE
#include "CSystemShim.h"

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef RENAME_NOREPLACE
#include <linux/fs.h>
#endif

const int notifybus_o_path = O_PATH;

int notifybus_rename_noreplace(int from_directory, const char *from, int to_directory,
                               const char *to) {
#ifdef SYS_renameat2
  // The system call itself: glibc before 2.28 and some Musl versions have no wrapper.
  return (int)syscall(SYS_renameat2, from_directory, from, to_directory, to,
                      RENAME_NOREPLACE);
#else
  errno = ENOSYS;
  return -1;
#endif
}

/// The kernel's `struct linux_dirent64` (glibc declares it only in its private headers).
struct notifybus_dirent64 {
  uint64_t d_ino;
  int64_t d_off;
  unsigned short d_reclen;
  unsigned char d_type;
  char d_name[];
};

const unsigned long notifybus_dirent64_reclen_offset =
    offsetof(struct notifybus_dirent64, d_reclen);
const unsigned long notifybus_dirent64_type_offset = offsetof(struct notifybus_dirent64, d_type);
const unsigned long notifybus_dirent64_name_offset = offsetof(struct notifybus_dirent64, d_name);

long notifybus_getdents64(int directory, void *buffer, unsigned long count) {
  return syscall(SYS_getdents64, directory, buffer, count);
}
