#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <string.h>
#include <sys/socket.h>
#include <netinet/icmp6.h>
#include <linux/icmp.h>
#include "CLinux.h"

int CLinux_enter_network_namespace(int fd) {
    return setns(fd, CLONE_NEWNET);
}

int CLinux_read_error_queue(int fd, struct CLinux_queued_error *out, void *payload, unsigned long payload_capacity) {
    char control[512];
    struct iovec vector = { .iov_base = payload, .iov_len = payload_capacity };
    struct sockaddr_storage address;
    struct msghdr message = {
        .msg_name = &address, .msg_namelen = sizeof address,
        .msg_iov = &vector, .msg_iovlen = 1,
        .msg_control = control, .msg_controllen = sizeof control,
    };
    ssize_t count = recvmsg(fd, &message, MSG_ERRQUEUE | MSG_DONTWAIT);
    if (count < 0) {
        return (errno == EAGAIN || errno == EWOULDBLOCK) ? 0 : -1;
    }
    memset(out, 0, sizeof *out);
    out->payload_length = count;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&message); c != NULL; c = CMSG_NXTHDR(&message, c)) {
        int ours = (c->cmsg_level == SOL_IP && c->cmsg_type == IP_RECVERR)
                || (c->cmsg_level == SOL_IPV6 && c->cmsg_type == IPV6_RECVERR);
        if (!ours || c->cmsg_len < CMSG_LEN(sizeof(struct sock_extended_err))) continue;
        const struct sock_extended_err *e = (const struct sock_extended_err *)CMSG_DATA(c);
        out->error = (int)e->ee_errno;
        out->origin = e->ee_origin;
        out->type = e->ee_type;
        out->code = e->ee_code;
        const struct sockaddr *offender = SO_EE_OFFENDER(e);
        size_t room = c->cmsg_len - CMSG_LEN(sizeof(struct sock_extended_err));
        if (offender->sa_family == AF_INET && room >= sizeof(struct sockaddr_in)) {
            memcpy(&out->offender, offender, sizeof(struct sockaddr_in));
            out->has_offender = 1;
        } else if (offender->sa_family == AF_INET6 && room >= sizeof(struct sockaddr_in6)) {
            memcpy(&out->offender, offender, sizeof(struct sockaddr_in6));
            out->has_offender = 1;
        }
        return 1;
    }
    return 1;
}

int CLinux_set_icmp_filter(int fd) {
    struct icmp_filter filter = {
        .data = ~((1U << ICMP_ECHOREPLY) | (1U << ICMP_DEST_UNREACH) | (1U << ICMP_TIME_EXCEEDED)),
    };
    return setsockopt(fd, SOL_RAW, ICMP_FILTER, &filter, sizeof filter);
}

int CLinux_set_icmp6_filter(int fd) {
    struct icmp6_filter filter;
    ICMP6_FILTER_SETBLOCKALL(&filter);
    ICMP6_FILTER_SETPASS(ICMP6_ECHO_REPLY, &filter);
    ICMP6_FILTER_SETPASS(ICMP6_DST_UNREACH, &filter);
    ICMP6_FILTER_SETPASS(ICMP6_TIME_EXCEEDED, &filter);
    return setsockopt(fd, IPPROTO_ICMPV6, ICMP6_FILTER, &filter, sizeof filter);
}
