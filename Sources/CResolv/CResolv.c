#include "CResolv.h"

#include <arpa/inet.h>
#include <arpa/nameser.h>
#include <errno.h>
#include <netinet/in.h>
#include <resolv.h>
#include <string.h>
#include <strings.h>

enum { udp_answer_size = 512, tcp_answer_size = 65535 };


/* The library keeps an IPv4 server in nsaddr_list and an IPv6 one behind _u._ext.nsaddrs, which
 * res_nclose frees up to nscount: slot `server` is swapped to the front and the count made 1, so
 * only that server is asked; `close_state` undoes it before the close, so nothing leaks. */
static void swap_front(struct __res_state *state, int server) {
    if (server != 0) {
        struct sockaddr_in first = state->nsaddr_list[0];
        state->nsaddr_list[0] = state->nsaddr_list[server];
        state->nsaddr_list[server] = first;
        struct sockaddr_in6 *first6 = state->_u._ext.nsaddrs[0];
        state->_u._ext.nsaddrs[0] = state->_u._ext.nsaddrs[server];
        state->_u._ext.nsaddrs[server] = first6;
    }
}

static void close_state(struct __res_state *state, int server, int count) {
    swap_front(state, server);
    state->nscount = count;
    res_nclose(state);
}

static void copy_server(const struct __res_state *state, int index, struct sockaddr_storage *out) {
    memset(out, 0, sizeof *out);
    if (state->nsaddr_list[index].sin_family == AF_INET) {
        memcpy(out, &state->nsaddr_list[index], sizeof(struct sockaddr_in));
    } else if (state->_u._ext.nsaddrs[index] != NULL && state->_u._ext.nsaddrs[index]->sin6_family == AF_INET6) {
        memcpy(out, state->_u._ext.nsaddrs[index], sizeof(struct sockaddr_in6));
    }
}

int CResolv_servers(struct sockaddr_storage *servers, int capacity) {
    struct __res_state state;
    memset(&state, 0, sizeof state);
    if (res_ninit(&state) != 0) return 0;
    int count = state.nscount < capacity ? state.nscount : capacity;
    for (int index = 0; index < count; index++) copy_server(&state, index, &servers[index]);
    res_nclose(&state);
    return count;
}

static int send_once(struct __res_state *state, const uint8_t *query, int query_length, uint8_t *answer,
                     int answer_size, CResolv_result *out) {
    errno = 0;
    int length = res_nsend(state, query, query_length, answer, answer_size);
    if (length < 0) {
        out->outcome = CResolv_no_answer;
        out->error = errno != 0 ? errno : ETIMEDOUT;
    }
    return length;
}

int CResolv_ask(const char *name, int type, int server, int limit_seconds, CResolv_result *out) {
    memset(out, 0, sizeof *out);
    struct __res_state state;
    memset(&state, 0, sizeof state);
    if (res_ninit(&state) != 0) {
        out->outcome = CResolv_no_answer;
        out->error = errno != 0 ? errno : EINVAL;
        return 0;
    }
    if (server < 0 || server >= state.nscount) {
        res_nclose(&state);
        return -1;
    }
    int count = state.nscount;
    swap_front(&state, server);
    state.nscount = 1;
    copy_server(&state, 0, &out->server);
    /* One try, the whole limit; the name as given (no search list); a truncated answer is returned
     * as it is, and asked again over TCP below. Replies whose ID or question differ are dropped by
     * res_nsend. `pfcode` makes it return a SERVFAIL or REFUSED answer instead of a bare failure. */
    state.retry = 1;
    state.retrans = limit_seconds > 0 ? limit_seconds : 1;
    state.options &= ~(RES_DNSRCH | RES_DEFNAMES | RES_USEVC | RES_ROTATE);
    state.options |= RES_IGNTC | RES_RECURSE;
    state.pfcode = RES_PRF_HEAD1;

    uint8_t query[NS_PACKETSZ];
    int query_length = res_nmkquery(&state, ns_o_query, name, ns_c_in, type, NULL, 0, NULL, query, sizeof query);
    if (query_length < 0) {
        out->outcome = CResolv_malformed;
        out->error = EINVAL;
        close_state(&state, server, count);
        return 0;
    }
    uint8_t answer[udp_answer_size];
    int length = send_once(&state, query, query_length, answer, sizeof answer, out);
    if (length >= (int)sizeof(HEADER) && ((const HEADER *)answer)->tc) {
        static __thread uint8_t long_answer[tcp_answer_size];
        state.options |= RES_USEVC;
        state.options &= ~RES_IGNTC;
        out->transport = CResolv_tcp;
        int long_length = send_once(&state, query, query_length, long_answer, sizeof long_answer, out);
        if (long_length >= 0) CResolv_read_answer(long_answer, long_length, name, type, out);
    } else if (length >= 0) {
        CResolv_read_answer(answer, length, name, type, out);
    }
    close_state(&state, server, count);
    return 0;
}

/* Names compare without case and without a trailing dot. */
static int same_name(const char *left, const char *right) {
    size_t left_length = strlen(left), right_length = strlen(right);
    if (left_length > 0 && left[left_length - 1] == '.') left_length--;
    if (right_length > 0 && right[right_length - 1] == '.') right_length--;
    return left_length == right_length && strncasecmp(left, right, left_length) == 0;
}

void CResolv_read_answer(const uint8_t *answer, int length, const char *name, int type, CResolv_result *out) {
    out->address_count = 0;
    ns_msg message;
    ns_rr record;
    if (length < 0 || ns_initparse(answer, length, &message) != 0 || ns_msg_count(message, ns_s_qd) != 1 ||
        ns_parserr(&message, ns_s_qd, 0, &record) != 0 || ns_rr_type(record) != type ||
        ns_rr_class(record) != ns_c_in || !same_name(ns_rr_name(record), name) || !ns_msg_getflag(message, ns_f_qr)) {
        out->outcome = CResolv_malformed;
        return;
    }
    out->rcode = ns_msg_getflag(message, ns_f_rcode);
    switch (out->rcode) {
    case ns_r_noerror: break;
    case ns_r_nxdomain: out->outcome = CResolv_nxdomain; return;
    case ns_r_servfail: out->outcome = CResolv_servfail; return;
    case ns_r_refused: out->outcome = CResolv_refused; return;
    default: out->outcome = CResolv_other_rcode; return;
    }
    int wanted = type == ns_t_aaaa ? 16 : 4;
    int count = ns_msg_count(message, ns_s_an);
    for (int index = 0; index < count; index++) {
        if (ns_parserr(&message, ns_s_an, index, &record) != 0) {
            out->outcome = CResolv_malformed;
            out->address_count = 0;
            return;
        }
        if (ns_rr_class(record) != ns_c_in || ns_rr_type(record) != type || ns_rr_rdlen(record) != wanted) continue;
        if (out->address_count < CResolv_maximum_addresses) {
            memcpy(out->addresses[out->address_count], ns_rr_rdata(record), (size_t)wanted);
            out->address_count++;
        }
    }
    out->outcome = out->address_count > 0 ? CResolv_addresses : CResolv_nodata;
}
