"""forbid_syscall.py SYSCALL ERRNO-NAME PROGRAM ARGS...: runs PROGRAM under a seccomp
filter that fails SYSCALL with ERRNO (as an old kernel or a strict container would)."""
import errno
import os
import sys

import seccomp

syscall, error = sys.argv[1], getattr(errno, sys.argv[2])
rules = seccomp.SyscallFilter(defaction=seccomp.ALLOW)
rules.add_rule(seccomp.ERRNO(error), syscall)
rules.load()
os.execv(sys.argv[3], sys.argv[3:])
