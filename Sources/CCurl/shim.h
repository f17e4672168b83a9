#ifndef NETOBSERVER_CCURL_SHIM_H
#define NETOBSERVER_CCURL_SHIM_H

#include <curl/curl.h>

/* curl_easy_setopt, curl_multi_setopt and curl_easy_getinfo are variadic, which
 * Swift cannot call: one typed wrapper per argument type used. */

static inline CURLcode CCurl_easy_setopt_long(CURL *easy, CURLoption option, long value) {
    return curl_easy_setopt(easy, option, value);
}
static inline CURLcode CCurl_easy_setopt_string(CURL *easy, CURLoption option, const char *value) {
    return curl_easy_setopt(easy, option, value);
}
static inline CURLcode CCurl_easy_setopt_pointer(CURL *easy, CURLoption option, void *value) {
    return curl_easy_setopt(easy, option, value);
}
static inline CURLcode CCurl_easy_setopt_slist(CURL *easy, CURLoption option, struct curl_slist *value) {
    return curl_easy_setopt(easy, option, value);
}

typedef size_t (*CCurl_write_callback)(char *data, size_t size, size_t count, void *context);
static inline CURLcode CCurl_easy_set_write(CURL *easy, CCurl_write_callback callback, void *context) {
    CURLcode code = curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, callback);
    return code != CURLE_OK ? code : curl_easy_setopt(easy, CURLOPT_WRITEDATA, context);
}

typedef int (*CCurl_socket_callback)(CURL *easy, curl_socket_t socket, int what, void *context, void *socketContext);
typedef int (*CCurl_timer_callback)(CURLM *multi, long timeoutMilliseconds, void *context);
static inline CURLMcode CCurl_multi_set_callbacks(CURLM *multi, CCurl_socket_callback socketCallback,
                                                  CCurl_timer_callback timerCallback, void *context) {
    CURLMcode code = curl_multi_setopt(multi, CURLMOPT_SOCKETFUNCTION, socketCallback);
    if (code == CURLM_OK) code = curl_multi_setopt(multi, CURLMOPT_SOCKETDATA, context);
    if (code == CURLM_OK) code = curl_multi_setopt(multi, CURLMOPT_TIMERFUNCTION, timerCallback);
    if (code == CURLM_OK) code = curl_multi_setopt(multi, CURLMOPT_TIMERDATA, context);
    return code;
}

static inline CURLcode CCurl_easy_getinfo_long(CURL *easy, CURLINFO info, long *value) {
    return curl_easy_getinfo(easy, info, value);
}
static inline CURLcode CCurl_easy_getinfo_string(CURL *easy, CURLINFO info, const char **value) {
    return curl_easy_getinfo(easy, info, value);
}
static inline CURLcode CCurl_easy_getinfo_pointer(CURL *easy, CURLINFO info, void **value) {
    return curl_easy_getinfo(easy, info, value);
}

/* CURLMsg's payload is a union; Swift sees it, but not by name. */
static inline CURLcode CCurl_message_result(const CURLMsg *message) { return message->data.result; }

static const int CCurl_POLL_NONE = CURL_POLL_NONE;
static const int CCurl_POLL_IN = CURL_POLL_IN;
static const int CCurl_POLL_OUT = CURL_POLL_OUT;
static const int CCurl_POLL_INOUT = CURL_POLL_INOUT;
static const int CCurl_POLL_REMOVE = CURL_POLL_REMOVE;
static const int CCurl_CSELECT_IN = CURL_CSELECT_IN;
static const int CCurl_CSELECT_OUT = CURL_CSELECT_OUT;
static const int CCurl_CSELECT_ERR = CURL_CSELECT_ERR;
static const curl_socket_t CCurl_SOCKET_TIMEOUT = CURL_SOCKET_TIMEOUT;
static const long CCurl_HTTP_VERSION_1_1 = CURL_HTTP_VERSION_1_1;
static const long CCurl_GLOBAL_DEFAULT = CURL_GLOBAL_DEFAULT;
static const unsigned int CCurl_VERSION_ASYNCHDNS = CURL_VERSION_ASYNCHDNS;
static const CURLversion CCurl_VERSION_NOW = CURLVERSION_NOW;

#endif
