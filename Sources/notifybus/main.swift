import CommandLineSupport
import NotifyTools

#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#endif

exit(await NotifyBusTool.main(Array(CommandLine.arguments.dropFirst())).rawValue)
