#include "CCommandLineBaseline.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static double now_ns(void) {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return (double)now.tv_sec * 1e9 + (double)now.tv_nsec;
}

double ccl_getopt_long_ns(int iterations, int argc, char *const *arguments, long *checksum) {
  static const struct option options[] = {
      {"count", required_argument, 0, 'c'}, {"timeout", required_argument, 0, 't'},
      {"prefix", required_argument, 0, 'p'}, {"json", no_argument, 0, 'j'},
      {"verbose", no_argument, 0, 'v'},     {0, 0, 0, 0},
  };
  char *argv[64];
  const char *prefixes[16];
  if (argc > 63) return -1;
  double start = now_ns();
  for (int i = 0; i < iterations; i++) {
    memcpy(argv, arguments, sizeof(char *) * (size_t)argc);
    argv[argc] = NULL;
    optind = 0;
    opterr = 0;
    int prefixCount = 0, verbose = 0, code;
    const char *count = NULL;
    while ((code = getopt_long(argc, argv, "c:t:vq", options, NULL)) != -1) {
      switch (code) {
      case 'c': count = optarg; break;
      case 'p': if (prefixCount < 16) prefixes[prefixCount++] = optarg; break;
      case 'v': verbose++; break;
      default: break;
      }
    }
    *checksum += prefixCount + (argc - optind) + verbose + (count ? (long)strlen(count) : 0);
  }
  return (now_ns() - start) / iterations;
}

double ccl_stdio_lines_ns(int iterations) {
  char line[64];
  double start = now_ns();
  for (int i = 0; i < iterations; i++) {
    snprintf(line, sizeof line, "group.example.saved %d\n", i);
    fputs(line, stdout);
    fflush(stdout);
  }
  return (now_ns() - start) / iterations;
}
