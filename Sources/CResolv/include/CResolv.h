#ifndef NETOBSERVER_CRESOLV_H
#define NETOBSERVER_CRESOLV_H

/* DNS through glibc's resolver library (libresolv): the nameservers of /etc/resolv.conf as
 * res_ninit reads them, one question sent by res_nsend (which drops replies whose ID or question
 * differ), the answer read by ns_initparse/ns_parserr. No DNS wire format is written here. */

#include <stdint.h>
#include <sys/socket.h>

enum {
    CResolv_addresses = 0, /* NOERROR with A/AAAA records of the type asked */
    CResolv_nodata = 1,    /* NOERROR without them */
    CResolv_nxdomain = 2,
    CResolv_servfail = 3,
    CResolv_refused = 4,
    CResolv_other_rcode = 5,
    CResolv_no_answer = 6, /* nothing came back in time (error says why) */
    CResolv_malformed = 7  /* an answer the library could not parse, or to another question */
};

enum { CResolv_udp = 0, CResolv_tcp = 1 };
enum { CResolv_maximum_addresses = 16 };

typedef struct {
    int outcome;
    int rcode;
    int transport;
    int error;
    int address_count;
    /* Each address's 4 or 16 bytes. */
    uint8_t addresses[CResolv_maximum_addresses][16];
    /* The server that answered (or was last asked): AF_INET or AF_INET6, or AF_UNSPEC when none. */
    struct sockaddr_storage server;
} CResolv_result;

/* The nameservers /etc/resolv.conf names now, at most `capacity` (the library's MAXNS is 3), in order;
 * returns how many. */
int CResolv_servers(struct sockaddr_storage *servers, int capacity);

/* Asks the `server`th nameserver of /etc/resolv.conf for `name`'s records of `type` (1: A, 28: AAAA),
 * recursion desired, no search list, within `limit_seconds`: over UDP, then over TCP when the
 * answer is truncated. Returns 0 with `out` filled, or -1 when `server` is out of range. */
int CResolv_ask(const char *name, int type, int server, int limit_seconds, CResolv_result *out);

/* Reads an answer to (`name`, `type`) the library received: its rcode and the addresses of that type.
 * `out->outcome` is `CResolv_malformed` when it does not parse or answers another question. */
void CResolv_read_answer(const uint8_t *answer, int length, const char *name, int type, CResolv_result *out);

#endif
