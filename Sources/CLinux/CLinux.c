#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <grp.h>
#include <linux/capability.h>
#include <string.h>
#include <sys/socket.h>
#include <netinet/icmp6.h>
#include <linux/icmp.h>
#include <linux/filter.h>
#include <linux/tcp.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/ioctl.h>
#include <linux/if_packet.h>
#include <signal.h>
#include <spawn.h>
#include <linux/if_ether.h>
#include <linux/userfaultfd.h>
#include <fcntl.h>
#include "CLinux.h"

/* <net/if.h> clashes with <linux/if.h>, which CLinux.h needs. */
extern char *if_indextoname(unsigned int index, char *name);

int CLinux_lower_thread_priority(int nice) {
    return setpriority(PRIO_PROCESS, (id_t) gettid(), nice);
}

void CLinux_line_buffer_stdout(void) {
    setvbuf(stdout, NULL, _IOLBF, 0);
}

int CLinux_enter_network_namespace(int fd) {
    return setns(fd, CLONE_NEWNET);
}

const unsigned long CLinux_tcp_info_offsets[4] = {
    offsetof(struct tcp_info, tcpi_retransmits), offsetof(struct tcp_info, tcpi_backoff),
    offsetof(struct tcp_info, tcpi_last_data_recv), offsetof(struct tcp_info, tcpi_bytes_received),
};

int CLinux_thread_usage(struct rusage *usage) {
    return getrusage(RUSAGE_THREAD, usage);
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

int CLinux_attach_echo_filter(int fd, int ipv4, unsigned short identifier) {
    /* IPv4 raw sockets deliver the IP header: X = its length from the IHL. */
    struct sock_filter v4[] = {
        BPF_STMT(BPF_LDX | BPF_B | BPF_MSH, 0),
        BPF_STMT(BPF_LD | BPF_B | BPF_IND, 0),                  /* ICMP type */
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, ICMP_ECHOREPLY, 0, 2),
        BPF_STMT(BPF_LD | BPF_H | BPF_IND, 4),                  /* identifier */
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, identifier, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, 0xFFFFFFFF),
        BPF_STMT(BPF_RET | BPF_K, 0),
    };
    /* ICMPv6 raw sockets deliver the ICMPv6 header first. */
    struct sock_filter v6[] = {
        BPF_STMT(BPF_LD | BPF_B | BPF_ABS, 0),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, ICMP6_ECHO_REPLY, 0, 2),
        BPF_STMT(BPF_LD | BPF_H | BPF_ABS, 4),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, identifier, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, 0xFFFFFFFF),
        BPF_STMT(BPF_RET | BPF_K, 0),
    };
    struct sock_fprog program = ipv4
        ? (struct sock_fprog){ .len = sizeof v4 / sizeof v4[0], .filter = v4 }
        : (struct sock_fprog){ .len = sizeof v6 / sizeof v6[0], .filter = v6 };
    return setsockopt(fd, SOL_SOCKET, SO_ATTACH_FILTER, &program, sizeof program);
}

int CLinux_drop_privileges(unsigned int uid, unsigned int gid) {
    gid_t group = gid;
    if (setgroups(1, &group) != 0) return -1;
    /* While still root: nothing but CAP_NET_RAW may ever come back. */
    for (int cap = 0; cap <= CAP_LAST_CAP; cap++) {
        if (cap != CAP_NET_RAW && prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 && errno != EINVAL) return -1;
    }
    if (prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0) != 0) return -1;
    if (setresgid(gid, gid, gid) != 0 || setresuid(uid, uid, uid) != 0) return -1;
    struct __user_cap_header_struct header = { .version = _LINUX_CAPABILITY_VERSION_3, .pid = 0 };
    struct __user_cap_data_struct data[2];
    memset(data, 0, sizeof data);
    data[CAP_TO_INDEX(CAP_NET_RAW)].permitted = CAP_TO_MASK(CAP_NET_RAW);
    data[CAP_TO_INDEX(CAP_NET_RAW)].effective = CAP_TO_MASK(CAP_NET_RAW);
    if (syscall(SYS_capset, &header, data) != 0) return -1;
    if (prctl(PR_SET_KEEPCAPS, 0, 0, 0, 0) != 0) return -1;
    return prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
}

/* Asks the kernel to map the pages of a read-only file mapping one at a time from now on, not 64 KiB around
 * each fault: a mapping registered with a userfaultfd for write-protection has no fault-around, and with
 * WP_ASYNC (Linux 6.7) the kernel settles any such fault itself, so nothing ever reads the descriptor. It is
 * opened once, for user-mode faults only (no privilege needed), and kept for the process's life. Where the
 * kernel or a seccomp filter refuses, pages keep coming back 64 KiB at a time, as before. */
#ifndef UFFD_FEATURE_WP_ASYNC
#define UFFD_FEATURE_WP_ASYNC (1 << 15)
#endif
#ifndef UFFD_USER_MODE_ONLY
#define UFFD_USER_MODE_ONLY 1
#endif
static int single_page_faults(void) {
    static int descriptor = -2;
    if (descriptor != -2) return descriptor;
    descriptor = (int) syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK | UFFD_USER_MODE_ONLY);
    if (descriptor < 0) return descriptor = -1;
    struct uffdio_api api = { .api = UFFD_API, .features = UFFD_FEATURE_WP_ASYNC };
    if (ioctl(descriptor, UFFDIO_API, &api) != 0) {
        close(descriptor);
        descriptor = -1;
    }
    return descriptor;
}

int CLinux_prepare_single_page_faults(void) {
    return single_page_faults() >= 0 ? 0 : -1;
}

static void fault_singly(unsigned long start, unsigned long end) {
    int descriptor = single_page_faults();
    if (descriptor < 0) return;
    struct uffdio_register range = { .range = { .start = start, .len = end - start }, .mode = UFFDIO_REGISTER_MODE_WP };
    (void) ioctl(descriptor, UFFDIO_REGISTER, &range);
}

/* What start-up alone touched stays resident: the kernel maps 64 KiB around every page fault in a file
 * mapping (fault-around), so a static Swift runtime's text, the libraries' symbol tables the dynamic
 * linker read, and code run once are resident in large runs nobody uses again. This unmaps the resident
 * pages of every read-only file mapping that holds no page of its own (no Anonymous: no relocated or
 * copied page, so each page is the file's and is read back from it if used again), each registered first
 * so that its pages come back one at a time (above). Returns the number of mappings dropped, or -1. */
int CLinux_drop_clean_file_pages(void) {
    FILE *smaps = fopen("/proc/self/smaps", "re");
    if (smaps == NULL) return -1;
    char line[512];
    unsigned long start = 0, end = 0, inode = 0;
    char permissions[5] = "";
    int dropped = 0;
    while (fgets(line, sizeof line, smaps) != NULL) {
        unsigned long long offset;
        unsigned int major, minor;
        unsigned long a, b, node;
        char perms[5];
        unsigned long anonymous;
        if (sscanf(line, "%lx-%lx %4s %llx %x:%x %lu", &a, &b, perms, &offset, &major, &minor, &node) == 7) {
            start = a;
            end = b;
            inode = node;
            memcpy(permissions, perms, sizeof permissions);
        } else if (sscanf(line, "Anonymous: %lu kB", &anonymous) == 1) {
            if (inode != 0 && permissions[1] != 'w' && permissions[3] == 'p' && anonymous == 0) {
                fault_singly(start, end);
                if (madvise((void *) start, end - start, MADV_DONTNEED) == 0) dropped++;
            }
            inode = 0;
        }
    }
    fclose(smaps);
    return dropped;
}

int CLinux_link_hardware_address(int ifindex, unsigned char out[6]) {
    struct ifreq request;
    memset(&request, 0, sizeof request);
    if (!if_indextoname((unsigned int)ifindex, request.ifr_name)) return -1;
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    int ok = ioctl(fd, SIOCGIFHWADDR, &request);
    int saved = errno;
    close(fd);
    if (ok < 0) { errno = saved; return -1; }
    memcpy(out, request.ifr_hwaddr.sa_data, 6);
    return request.ifr_hwaddr.sa_family;
}

int CLinux_packet_socket(int ifindex, unsigned short protocol) {
    int fd = socket(AF_PACKET, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, htons(protocol));
    if (fd < 0) return -1;
    struct sockaddr_ll address;
    memset(&address, 0, sizeof address);
    address.sll_family = AF_PACKET;
    address.sll_protocol = htons(protocol);
    address.sll_ifindex = ifindex;
    if (bind(fd, (struct sockaddr *)&address, sizeof address) < 0) {
        int saved = errno;
        close(fd);
        errno = saved;
        return -1;
    }
    return fd;
}

long CLinux_packet_send(int fd, int ifindex, unsigned short protocol, const unsigned char *destination,
                        const void *bytes, unsigned long length) {
    struct sockaddr_ll address;
    memset(&address, 0, sizeof address);
    address.sll_family = AF_PACKET;
    address.sll_protocol = htons(protocol);
    address.sll_ifindex = ifindex;
    address.sll_halen = 6;
    memcpy(address.sll_addr, destination, 6);
    return sendto(fd, bytes, length, 0, (struct sockaddr *)&address, sizeof address);
}

int CLinux_neighbor_socket6(int ifindex) {
    char name[IFNAMSIZ];
    if (!if_indextoname((unsigned int)ifindex, name)) return -1;
    int fd = socket(AF_INET6, SOCK_RAW | SOCK_CLOEXEC | SOCK_NONBLOCK, IPPROTO_ICMPV6);
    if (fd < 0) return -1;
    int hops = 255;
    struct icmp6_filter filter;
    ICMP6_FILTER_SETBLOCKALL(&filter);
    ICMP6_FILTER_SETPASS(ND_NEIGHBOR_ADVERT, &filter);
    if (setsockopt(fd, IPPROTO_IPV6, IPV6_UNICAST_HOPS, &hops, sizeof hops) < 0
        || setsockopt(fd, IPPROTO_IPV6, IPV6_MULTICAST_HOPS, &hops, sizeof hops) < 0
        || setsockopt(fd, IPPROTO_ICMPV6, ICMP6_FILTER, &filter, sizeof filter) < 0
        || setsockopt(fd, IPPROTO_IPV6, IPV6_RECVHOPLIMIT, &(int){1}, sizeof(int)) < 0
        || setsockopt(fd, SOL_SOCKET, SO_BINDTODEVICE, name, (socklen_t)strlen(name) + 1) < 0) {
        int saved = errno;
        close(fd);
        errno = saved;
        return -1;
    }
    return fd;
}

int CLinux_router_advertisement_socket(void) {
    int fd = socket(AF_INET6, SOCK_RAW | SOCK_CLOEXEC | SOCK_NONBLOCK, IPPROTO_ICMPV6);
    if (fd < 0) return -1;
    struct icmp6_filter filter;
    ICMP6_FILTER_SETBLOCKALL(&filter);
    ICMP6_FILTER_SETPASS(ND_ROUTER_ADVERT, &filter);
    if (setsockopt(fd, IPPROTO_ICMPV6, ICMP6_FILTER, &filter, sizeof filter) < 0
        || setsockopt(fd, IPPROTO_IPV6, IPV6_RECVHOPLIMIT, &(int){1}, sizeof(int)) < 0) {
        int saved = errno;
        close(fd);
        errno = saved;
        return -1;
    }
    return fd;
}

long CLinux_recv_with_hop_limit(int fd, void *buffer, unsigned long length, struct sockaddr_in6 *from, int *hop_limit) {
    struct iovec iov = { .iov_base = buffer, .iov_len = length };
    union { struct cmsghdr header; char space[CMSG_SPACE(sizeof(int))]; } control;
    struct msghdr message = {
        .msg_name = from, .msg_namelen = sizeof *from, .msg_iov = &iov, .msg_iovlen = 1,
        .msg_control = &control, .msg_controllen = sizeof control,
    };
    *hop_limit = -1;
    ssize_t count = recvmsg(fd, &message, MSG_DONTWAIT);
    if (count < 0) return -1;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&message); c; c = CMSG_NXTHDR(&message, c)) {
        if (c->cmsg_level == IPPROTO_IPV6 && c->cmsg_type == IPV6_HOPLIMIT && c->cmsg_len >= CMSG_LEN(sizeof(int)))
            memcpy(hop_limit, CMSG_DATA(c), sizeof(int));
    }
    return (long)count;
}

extern char **environ;

/* What stops a service or a terminal's job: systemd sends SIGTERM to every process of the unit's cgroup, and a
 * terminal sends SIGINT, SIGQUIT and SIGHUP to the whole job. */
static const int CLinux_stops[] = { SIGTERM, SIGINT, SIGQUIT, SIGHUP };

static void CLinux_stop_signals(sigset_t *set) {
    sigemptyset(set);
    for (size_t index = 0; index < sizeof CLinux_stops / sizeof CLinux_stops[0]; index++) sigaddset(set, CLinux_stops[index]);
}

int CLinux_spawn_with_descriptor(const char *path, const char *argument0, const char *argument1, int fd) {
    posix_spawn_file_actions_t actions;
    posix_spawnattr_t attributes;
    if (posix_spawn_file_actions_init(&actions) != 0) return -1;
    if (posix_spawnattr_init(&attributes) != 0) {
        posix_spawn_file_actions_destroy(&actions);
        return -1;
    }
    sigset_t stops, all;
    CLinux_stop_signals(&stops);
    sigfillset(&all);
    /* dup2 onto itself clears close-on-exec too (glibc 2.29 and later). Nothing else is inherited: a
     * library's socket opened without close-on-exec (libcurl's) would otherwise stay open in the child,
     * and a connection the daemon gave up would live on, its SYNs still sent, holding a server's only slot. */
    int result = posix_spawn_file_actions_adddup2(&actions, fd, 3);
    if (result == 0) result = posix_spawn_file_actions_addclosefrom_np(&actions, 4);
    /* Blocked until the helper ignores them (CLinux_become_helper): a stop that reaches it first must not end it. */
    if (result == 0) result = posix_spawnattr_setsigmask(&attributes, &stops);
    if (result == 0) result = posix_spawnattr_setsigdefault(&attributes, &all);
    if (result == 0) result = posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    /* Ambient capabilities are kept across exec: a unit's AmbientCapabilities=CAP_NET_RAW, meant for the daemon,
     * would reach the helper too. The daemon's own effective set is not touched. */
    (void)prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
    pid_t pid = -1;
    char *arguments[] = { (char *)argument0, (char *)argument1, NULL };
    if (result == 0) result = posix_spawn(&pid, path, &actions, &attributes, arguments, environ);
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attributes);
    if (result != 0) {
        errno = result;
        return -1;
    }
    return pid;
}

int CLinux_become_helper(void) {
    if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0) return -1;
    /* The stop signals are the daemon's: it finishes its writes through the helper, then exits, and the helper
     * dies with it. Ignored, then unblocked (a stop that came in meanwhile is dropped). */
    sigset_t stops;
    CLinux_stop_signals(&stops);
    struct sigaction ignore;
    memset(&ignore, 0, sizeof ignore);
    ignore.sa_handler = SIG_IGN;
    for (size_t index = 0; index < sizeof CLinux_stops / sizeof CLinux_stops[0]; index++) {
        if (sigaction(CLinux_stops[index], &ignore, NULL) != 0) return -1;
    }
    if (sigprocmask(SIG_UNBLOCK, &stops, NULL) != 0) return -1;
    /* Each step may be forbidden (a unit's SystemCallFilter=~@privileged fails capset): the helper then keeps
     * what it was started with, which is never more than the daemon holds, and goes on. */
    (void)prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
    struct __user_cap_header_struct header = { .version = _LINUX_CAPABILITY_VERSION_3, .pid = 0 };
    struct __user_cap_data_struct data[2];
    memset(data, 0, sizeof data);
    (void)syscall(SYS_capset, &header, data);
    (void)prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
    return 0;
}
