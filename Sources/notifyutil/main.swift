import CommandLineSupport
import NotifyTools

#if canImport(Glibc)
  import Glibc
#endif

exit(await Notifyutil.main(Array(CommandLine.arguments.dropFirst())).rawValue)
