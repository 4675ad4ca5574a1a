// C baselines for the CommandLineSupport benchmarks: what a C tool does for the same work.
#ifndef CCOMMANDLINEBASELINE_H
#define CCOMMANDLINEBASELINE_H

/// Parses `argv` (program name first, `argc` entries, at most 63) `iterations` times with
/// glibc's getopt_long, keeping each optarg, and adds what it found to `*checksum`.
/// Returns nanoseconds per parse.
double ccl_getopt_long_ns(int iterations, int argc, char *const *argv, long *checksum);

/// Writes `iterations` lines to stdout with fputs and fflush after each, as a line-flushed C
/// tool does. Returns nanoseconds per line.
double ccl_stdio_lines_ns(int iterations);

#endif
