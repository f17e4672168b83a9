#ifndef NETOBSERVER_CCURL_H
#define NETOBSERVER_CCURL_H

#include <curl/curl.h>

/* libcurl, loaded with dlopen the first time CheckURL is used: Debian's libcurl
 * brings some thirty libraries (OpenSSL, GnuTLS, Kerberos, LDAP…) that cost ~10 MB
 * of RSS once loaded, which a daemon with CheckURL off (the default) never pays.
 * Every call goes through these wrappers; the variadic setopt/getinfo, which
 * Swift cannot call, get one typed wrapper per argument type. */

/* 1 once libcurl is loaded and initialised, 0 when it cannot be (then nothing else may be called). */
int CCurl_load(void);
/* What dlopen or initialisation said when CCurl_load failed. */
const char *CCurl_load_error(void);
/* Whether the loaded libcurl resolves names off the calling thread. */
int CCurl_resolves_asynchronously(void);

CURLM *CCurl_multi_init(void);
void CCurl_multi_cleanup(CURLM *multi);
CURLMcode CCurl_multi_add_handle(CURLM *multi, CURL *easy);
CURLMcode CCurl_multi_remove_handle(CURLM *multi, CURL *easy);
CURLMcode CCurl_multi_socket_action(CURLM *multi, curl_socket_t socket, int events, int *running);
CURLMsg *CCurl_multi_info_read(CURLM *multi, int *left);

typedef int (*CCurl_socket_callback)(CURL *easy, curl_socket_t socket, int what, void *context, void *socketContext);
typedef int (*CCurl_timer_callback)(CURLM *multi, long timeoutMilliseconds, void *context);
CURLMcode CCurl_multi_set_callbacks(CURLM *multi, CCurl_socket_callback socketCallback,
                                    CCurl_timer_callback timerCallback, void *context);

CURL *CCurl_easy_init(void);
void CCurl_easy_cleanup(CURL *easy);
const char *CCurl_easy_strerror(CURLcode code);
CURLcode CCurl_easy_setopt_long(CURL *easy, CURLoption option, long value);
CURLcode CCurl_easy_setopt_string(CURL *easy, CURLoption option, const char *value);
CURLcode CCurl_easy_setopt_slist(CURL *easy, CURLoption option, struct curl_slist *value);
typedef size_t (*CCurl_write_callback)(char *data, size_t size, size_t count, void *context);
CURLcode CCurl_easy_set_write(CURL *easy, CCurl_write_callback callback, void *context);
typedef size_t (*CCurl_header_callback)(char *data, size_t size, size_t count, void *context);
CURLcode CCurl_easy_set_header(CURL *easy, CCurl_header_callback callback, void *context);
CURLcode CCurl_easy_getinfo_long(CURL *easy, CURLINFO info, long *value);
CURLcode CCurl_easy_getinfo_string(CURL *easy, CURLINFO info, const char **value);

struct curl_slist *CCurl_slist_append(struct curl_slist *list, const char *text);
void CCurl_slist_free_all(struct curl_slist *list);

/* CURLMsg's payload is a union; Swift sees it, but not by name. */
static inline CURLcode CCurl_message_result(const CURLMsg *message) { return message->data.result; }

/* Macros and expressions Swift's importer drops. */
static const int CCurl_POLL_IN = CURL_POLL_IN;
static const int CCurl_POLL_OUT = CURL_POLL_OUT;
static const int CCurl_POLL_INOUT = CURL_POLL_INOUT;
static const int CCurl_POLL_REMOVE = CURL_POLL_REMOVE;
static const int CCurl_CSELECT_IN = CURL_CSELECT_IN;
static const int CCurl_CSELECT_OUT = CURL_CSELECT_OUT;
static const int CCurl_CSELECT_ERR = CURL_CSELECT_ERR;
static const curl_socket_t CCurl_SOCKET_TIMEOUT = CURL_SOCKET_TIMEOUT;
static const long CCurl_HTTP_VERSION_1_1 = CURL_HTTP_VERSION_1_1;

#endif
