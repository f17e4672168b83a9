#ifndef NETOBSERVER_CLINUX_H
#define NETOBSERVER_CLINUX_H

/* Linux headers and macros that Glibc's Swift module map does not cover. */
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/resource.h>
#include <net/if_arp.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/if_link.h>
#include <linux/if_addr.h>
#include <linux/if.h>
#include <netinet/in.h>
#include <linux/errqueue.h>
#include <linux/sock_diag.h>
#include <linux/inet_diag.h>
#include <malloc.h>

/* Netlink's walking macros are function-like, so Swift cannot call them.
 * Each wrapper is the macro itself; lengths are ints as the macros expect. */

static inline int CLinux_NLMSG_OK(const struct nlmsghdr *h, int len) { return NLMSG_OK(h, len); }
static inline const struct nlmsghdr *CLinux_NLMSG_NEXT(const struct nlmsghdr *h, int *len) {
    return (const struct nlmsghdr *)NLMSG_NEXT(h, *len);
}
static inline const void *CLinux_NLMSG_DATA(const struct nlmsghdr *h) { return NLMSG_DATA(h); }
static inline int CLinux_NLMSG_LENGTH(int len) { return NLMSG_LENGTH(len); }
static inline int CLinux_NLMSG_SPACE(int len) { return NLMSG_SPACE(len); }
static inline int CLinux_NLMSG_PAYLOAD(const struct nlmsghdr *h, int len) { return NLMSG_PAYLOAD(h, len); }

static inline int CLinux_RTA_OK(const struct rtattr *rta, int len) { return RTA_OK(rta, len); }
static inline const struct rtattr *CLinux_RTA_NEXT(const struct rtattr *rta, int *len) {
    return (const struct rtattr *)RTA_NEXT(rta, *len);
}
static inline const void *CLinux_RTA_DATA(const struct rtattr *rta) { return RTA_DATA(rta); }
static inline int CLinux_RTA_PAYLOAD(const struct rtattr *rta) { return RTA_PAYLOAD(rta); }
static inline int CLinux_RTA_LENGTH(int len) { return RTA_LENGTH(len); }
static inline int CLinux_RTA_SPACE(int len) { return RTA_SPACE(len); }

/* Where each message kind's attributes start, and how many bytes they span. */
static inline const struct rtattr *CLinux_IFLA_RTA(const struct ifinfomsg *m) { return IFLA_RTA(m); }
static inline int CLinux_IFLA_PAYLOAD(const struct nlmsghdr *h) { return IFLA_PAYLOAD(h); }
static inline const struct rtattr *CLinux_IFA_RTA(const struct ifaddrmsg *m) { return IFA_RTA(m); }
static inline int CLinux_IFA_PAYLOAD(const struct nlmsghdr *h) { return IFA_PAYLOAD(h); }
static inline const struct rtattr *CLinux_RTM_RTA(const struct rtmsg *m) { return RTM_RTA(m); }
static inline int CLinux_RTM_PAYLOAD(const struct nlmsghdr *h) { return RTM_PAYLOAD(h); }

/* Multicast groups given as bit masks in older headers' macros. */
static const unsigned int CLinux_RTMGRP_LINK = RTMGRP_LINK;
static const unsigned int CLinux_RTMGRP_IPV4_IFADDR = RTMGRP_IPV4_IFADDR;
static const unsigned int CLinux_RTMGRP_IPV6_IFADDR = RTMGRP_IPV6_IFADDR;
static const unsigned int CLinux_RTMGRP_IPV4_ROUTE = RTMGRP_IPV4_ROUTE;
static const unsigned int CLinux_RTMGRP_IPV6_ROUTE = RTMGRP_IPV6_ROUTE;

/* One entry of a socket's error queue (IP_RECVERR / IPV6_RECVERR): what
 * failed, where (the offender, e.g. the router that sent the ICMP error), and
 * the start of the datagram we had sent. The cmsg walk lives in CLinux.c. */
struct CLinux_queued_error {
    int error;              /* ee_errno */
    unsigned char origin;   /* SO_EE_ORIGIN_* */
    unsigned char type;     /* ICMP type, for ICMP origins */
    unsigned char code;
    int has_offender;
    struct sockaddr_storage offender;
    long payload_length;    /* bytes of our datagram copied into the caller's buffer */
};

/* recvmsg(fd, MSG_ERRQUEUE): 1 with *out filled, 0 when the queue is empty, -1 with errno. */
int CLinux_read_error_queue(int fd, struct CLinux_queued_error *out, void *payload, unsigned long payload_capacity);

/* Raw ICMP sockets see every echo reply on the host; this classic BPF program
 * drops, in the kernel, replies whose identifier is not ours (errors pass). */
int CLinux_attach_echo_filter(int fd, int ipv4, unsigned short identifier);

/* Raw ICMP sockets: let through only echo replies, destination unreachable and time exceeded. */
int CLinux_set_icmp_filter(int fd);
int CLinux_set_icmp6_filter(int fd);

/* The neighbour check's sockets (CAP_NET_RAW). The link's hardware address into out[6]: its ARPHRD_* type,
 * -1 with errno. */
int CLinux_link_hardware_address(int ifindex, unsigned char out[6]);
/* An AF_PACKET datagram socket for `protocol` (host order, e.g. ETH_P_ARP) bound to `ifindex`: the fd, -1 with errno. */
int CLinux_packet_socket(int ifindex, unsigned short protocol);
/* Sends `length` bytes to the link-layer `destination` (6 bytes) on `ifindex`: bytes sent, -1 with errno. */
long CLinux_packet_send(int fd, int ifindex, unsigned short protocol, const unsigned char *destination,
                        const void *bytes, unsigned long length);
/* A raw ICMPv6 socket for Neighbor Solicitations on `ifindex`: hop limit 255, only Neighbor Advertisements let
 * through, bound to the link. The fd, -1 with errno. */
int CLinux_neighbor_socket6(int ifindex);

/* A raw ICMPv6 socket that lets only router advertisements (134) through and reports each one's hop limit
 * (CAP_NET_RAW): for networks where the kernel does not process them itself (accept_ra 0). The fd, -1 with errno. */
int CLinux_router_advertisement_socket(void);

/* recvfrom on a socket opened with IPV6_RECVHOPLIMIT (CLinux_neighbor_socket6): the byte count (-1 and errno),
 * the sender, and the hop limit the packet arrived with in *hop_limit (-1 when the kernel gave none). */
long CLinux_recv_with_hop_limit(int fd, void *buffer, unsigned long length, struct sockaddr_in6 *from, int *hop_limit);
/* The protocol numbers, as Swift cannot import the macros' types. */
static const unsigned short CLinux_ETH_P_ARP = 0x0806;

static const unsigned char CLinux_SO_EE_ORIGIN_LOCAL = SO_EE_ORIGIN_LOCAL;
static const unsigned char CLinux_SO_EE_ORIGIN_ICMP = SO_EE_ORIGIN_ICMP;
static const unsigned char CLinux_SO_EE_ORIGIN_ICMP6 = SO_EE_ORIGIN_ICMP6;

/* Becomes uid/gid (no supplementary groups) keeping only CAP_NET_RAW, in the
 * permitted, effective and bounding sets. Call as root, before other threads
 * start. 0 on success, -1 with errno. */
int CLinux_drop_privileges(unsigned int uid, unsigned int gid);

/* Starts `path` with the arguments `argument0 argument1` and `fd` as its descriptor 3 (and none above), every signal
 * at its default (the daemon blocks some for its signalfd and ignores SIGPIPE) and unblocked but those that stop a
 * service or a job (SIGTERM, SIGINT, SIGQUIT, SIGHUP), which CLinux_become_helper ignores, in the daemon's environment,
 * after clearing the caller's ambient capabilities. Returns the child's PID, or -1 with errno set. */
int CLinux_spawn_with_descriptor(const char *path, const char *argument0, const char *argument1, int fd);

/* The blocking helper's start: killed when its parent dies (PR_SET_PDEATHSIG), deaf to the signals that stop a
 * service or a job (they are the daemon's, which finishes its writes through the helper first), no capability left
 * (what it does needs none: lookups, socket dumps, files of its own user), nor any to gain, where the
 * system allows dropping them. 0, or -1 when it cannot be tied to its parent. */
int CLinux_become_helper(void);

/* Where tcp_info's fields are, for the test that holds the pure sock_diag reader (SocketDiagReply) to the
 * headers: tcpi_retransmits, tcpi_backoff, tcpi_last_data_recv, tcpi_bytes_received. */
extern const unsigned long CLinux_tcp_info_offsets[4];
/* This thread's nice value (setpriority on its thread id); -1 with errno when refused. */
int CLinux_lower_thread_priority(int nice);

/* Unmaps the resident pages of read-only file mappings that hold none of their own (read back from the file if used). */
int CLinux_drop_clean_file_pages(void);

/* Opens, once, the descriptor through which the drops above ask for pages to come back one at a time (kept for the
 * process's life): done at start, so that the descriptor is there before anyone counts them. 0, or -1 where refused. */
int CLinux_prepare_single_page_faults(void);

/* Constants the importer cannot see as such. */
static const unsigned short CLinux_SOCK_DIAG_BY_FAMILY = SOCK_DIAG_BY_FAMILY;
static const unsigned short CLinux_TCPDIAG_GETSOCK = TCPDIAG_GETSOCK;
static const unsigned char CLinux_INET_DIAG_BC_S_COND = INET_DIAG_BC_S_COND;
static const unsigned char CLinux_INET_DIAG_BC_JMP = INET_DIAG_BC_JMP;
static const unsigned short CLinux_INET_DIAG_REQ_BYTECODE = INET_DIAG_REQ_BYTECODE;
static const unsigned short CLinux_INET_DIAG_INFO = INET_DIAG_INFO;

_Static_assert(sizeof(struct inet_diag_msg) == 72, "inet_diag_msg layout");
_Static_assert(sizeof(struct inet_diag_req_v2) == 56, "inet_diag_req_v2 layout");
_Static_assert(sizeof(struct inet_diag_req) == 60, "inet_diag_req layout");
_Static_assert(sizeof(struct inet_diag_bc_op) == 4, "inet_diag_bc_op layout");
_Static_assert(sizeof(struct inet_diag_hostcond) == 8, "inet_diag_hostcond layout");

/* getrusage(RUSAGE_THREAD): _GNU_SOURCE-only too. */
int CLinux_thread_usage(struct rusage *usage);

/* stdout a line at a time, also into a pipe (Swift 6 cannot name the C library's stdout). */
void CLinux_line_buffer_stdout(void);

/* setns(fd, CLONE_NEWNET): _GNU_SOURCE-only, so it is defined in CLinux.c. */
int CLinux_enter_network_namespace(int fd);

/* An expression with ~, which the importer drops. */
static const unsigned short CLinux_NLA_TYPE_MASK = (unsigned short)NLA_TYPE_MASK;

_Static_assert(sizeof(struct nlmsghdr) == 16, "nlmsghdr layout");
_Static_assert(sizeof(struct rtattr) == 4, "rtattr layout");

#endif
