#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#endif

// The C library calls whose names collide with members of SystemSupport's own types
// (`read`, `write`, `close`, `kill`), spelled once for Glibc and once for Musl. Every
// other file calls these instead of qualifying a module name, so the Musl branch compiles.

/// `read(2)`.
@inline(__always)
func systemRead(_ fd: CInt, _ buffer: UnsafeMutableRawPointer?, _ count: Int) -> Int {
  #if canImport(Glibc)
    Glibc.read(fd, buffer, count)
  #elseif canImport(Musl)
    Musl.read(fd, buffer, count)
  #endif
}

/// `write(2)`.
@inline(__always)
func systemWrite(_ fd: CInt, _ buffer: UnsafeRawPointer?, _ count: Int) -> Int {
  #if canImport(Glibc)
    Glibc.write(fd, buffer, count)
  #elseif canImport(Musl)
    Musl.write(fd, buffer, count)
  #endif
}

/// `close(2)`.
@inline(__always)
func systemClose(_ fd: CInt) -> CInt {
  #if canImport(Glibc)
    Glibc.close(fd)
  #elseif canImport(Musl)
    Musl.close(fd)
  #endif
}

/// `kill(2)`.
@inline(__always)
func systemKill(_ pid: pid_t, _ signal: CInt) -> CInt {
  #if canImport(Glibc)
    Glibc.kill(pid, signal)
  #elseif canImport(Musl)
    Musl.kill(pid, signal)
  #endif
}
