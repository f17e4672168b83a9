#define _GNU_SOURCE
#include <sched.h>
#include "CLinux.h"

int CLinux_enter_network_namespace(int fd) {
    return setns(fd, CLONE_NEWNET);
}
