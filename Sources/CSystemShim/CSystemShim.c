#define _GNU_SOURCE
#include "CSystemShim.h"

#include <errno.h>
#include <fcntl.h>
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
