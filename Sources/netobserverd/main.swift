import Glibc
import MonitorService

exit(Daemon.main(Array(CommandLine.arguments.dropFirst())))
