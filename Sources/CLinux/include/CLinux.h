#ifndef NETOBSERVER_CLINUX_H
#define NETOBSERVER_CLINUX_H

/* Linux headers that Glibc's Swift module map does not cover. */
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>

#endif
