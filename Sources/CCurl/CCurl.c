/* dladdr */
#define _GNU_SOURCE
#include "CCurl.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

/* The libcurl functions netobserver uses, found with dlsym. */
static struct {
    CURLcode (*global_init)(long);
    curl_version_info_data *(*version_info)(CURLversion);
    CURLM *(*multi_init)(void);
    CURLMcode (*multi_cleanup)(CURLM *);
    CURLMcode (*multi_add_handle)(CURLM *, CURL *);
    CURLMcode (*multi_remove_handle)(CURLM *, CURL *);
    CURLMcode (*multi_socket_action)(CURLM *, curl_socket_t, int, int *);
    CURLMsg *(*multi_info_read)(CURLM *, int *);
    CURLMcode (*multi_setopt)(CURLM *, CURLMoption, ...);
    CURL *(*easy_init)(void);
    void (*easy_cleanup)(CURL *);
    const char *(*easy_strerror)(CURLcode);
    CURLcode (*easy_setopt)(CURL *, CURLoption, ...);
    CURLcode (*easy_getinfo)(CURL *, CURLINFO, ...);
    struct curl_slist *(*slist_append)(struct curl_slist *, const char *);
    void (*slist_free_all)(struct curl_slist *);
} api;

static int state; /* 0 not tried, 1 loaded, -1 failed */
static char failure[256];

#define FIND(field, name) \
    if (!(*(void **)&api.field = dlsym(library, name))) { \
        snprintf(failure, sizeof failure, "libcurl.so.4 has no %s", name); \
        return 0; \
    }

/* libcurl from the system's library directory only: the one the C library itself was
 * loaded from (/lib/x86_64-linux-gnu on Debian, also reached as /usr/lib/…), then the
 * usual ones. Every name is absolute, so neither a run path, LD_LIBRARY_PATH nor the
 * current directory can put another libcurl in its place. */
static void *open_system_libcurl(void) {
    char candidates[4][512];
    int count = 0;
    Dl_info info;
    if (dladdr((void *)&snprintf, &info) && info.dli_fname && info.dli_fname[0] == '/') {
        const char *slash = strrchr(info.dli_fname, '/');
        int length = (int)(slash - info.dli_fname);
        if (length > 0 && length < 400) {
            snprintf(candidates[count++], sizeof candidates[0], "%.*s/libcurl.so.4", length, info.dli_fname);
            if (strncmp(info.dli_fname, "/lib", 4) == 0)
                snprintf(candidates[count++], sizeof candidates[0], "/usr%.*s/libcurl.so.4", length, info.dli_fname);
        }
    }
    snprintf(candidates[count++], sizeof candidates[0], "/usr/lib64/libcurl.so.4");
    snprintf(candidates[count++], sizeof candidates[0], "/usr/lib/libcurl.so.4");
    for (int i = 0; i < count; i++) {
        void *library = dlopen(candidates[i], RTLD_NOW | RTLD_LOCAL);
        if (library) return library;
    }
    snprintf(failure, sizeof failure, "no libcurl.so.4 in the system's library directories (%s)", candidates[0]);
    return NULL;
}

static int load(void) {
    void *library = open_system_libcurl();
    if (!library) return 0;
    FIND(global_init, "curl_global_init")
    FIND(version_info, "curl_version_info")
    FIND(multi_init, "curl_multi_init")
    FIND(multi_cleanup, "curl_multi_cleanup")
    FIND(multi_add_handle, "curl_multi_add_handle")
    FIND(multi_remove_handle, "curl_multi_remove_handle")
    FIND(multi_socket_action, "curl_multi_socket_action")
    FIND(multi_info_read, "curl_multi_info_read")
    FIND(multi_setopt, "curl_multi_setopt")
    FIND(easy_init, "curl_easy_init")
    FIND(easy_cleanup, "curl_easy_cleanup")
    FIND(easy_strerror, "curl_easy_strerror")
    FIND(easy_setopt, "curl_easy_setopt")
    FIND(easy_getinfo, "curl_easy_getinfo")
    FIND(slist_append, "curl_slist_append")
    FIND(slist_free_all, "curl_slist_free_all")
    /* TLS (for SecureCheckURL and the captive-portal API) is set up by libcurl on its own since 7.57. */
    if (api.global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        snprintf(failure, sizeof failure, "curl_global_init failed");
        return 0;
    }
    return 1;
}

int CCurl_load(void) {
    if (state == 0) state = load() ? 1 : -1;
    return state == 1;
}

const char *CCurl_load_error(void) { return failure; }

int CCurl_resolves_asynchronously(void) {
    curl_version_info_data *info = api.version_info(CURLVERSION_NOW);
    return info && (info->features & CURL_VERSION_ASYNCHDNS) != 0;
}

CURLM *CCurl_multi_init(void) { return api.multi_init(); }
void CCurl_multi_cleanup(CURLM *multi) { api.multi_cleanup(multi); }
CURLMcode CCurl_multi_add_handle(CURLM *multi, CURL *easy) { return api.multi_add_handle(multi, easy); }
CURLMcode CCurl_multi_remove_handle(CURLM *multi, CURL *easy) { return api.multi_remove_handle(multi, easy); }
CURLMcode CCurl_multi_socket_action(CURLM *multi, curl_socket_t socket, int events, int *running) {
    return api.multi_socket_action(multi, socket, events, running);
}
CURLMsg *CCurl_multi_info_read(CURLM *multi, int *left) { return api.multi_info_read(multi, left); }

CURLMcode CCurl_multi_set_callbacks(CURLM *multi, CCurl_socket_callback socketCallback,
                                    CCurl_timer_callback timerCallback, void *context) {
    CURLMcode code = api.multi_setopt(multi, CURLMOPT_SOCKETFUNCTION, socketCallback);
    if (code == CURLM_OK) code = api.multi_setopt(multi, CURLMOPT_SOCKETDATA, context);
    if (code == CURLM_OK) code = api.multi_setopt(multi, CURLMOPT_TIMERFUNCTION, timerCallback);
    if (code == CURLM_OK) code = api.multi_setopt(multi, CURLMOPT_TIMERDATA, context);
    return code;
}

CURL *CCurl_easy_init(void) { return api.easy_init(); }
void CCurl_easy_cleanup(CURL *easy) { api.easy_cleanup(easy); }
const char *CCurl_easy_strerror(CURLcode code) { return api.easy_strerror(code); }
CURLcode CCurl_easy_setopt_long(CURL *easy, CURLoption option, long value) { return api.easy_setopt(easy, option, value); }
CURLcode CCurl_easy_setopt_string(CURL *easy, CURLoption option, const char *value) {
    return api.easy_setopt(easy, option, value);
}
CURLcode CCurl_easy_setopt_slist(CURL *easy, CURLoption option, struct curl_slist *value) {
    return api.easy_setopt(easy, option, value);
}
CURLcode CCurl_easy_set_write(CURL *easy, CCurl_write_callback callback, void *context) {
    CURLcode code = api.easy_setopt(easy, CURLOPT_WRITEFUNCTION, callback);
    return code != CURLE_OK ? code : api.easy_setopt(easy, CURLOPT_WRITEDATA, context);
}
CURLcode CCurl_easy_set_header(CURL *easy, CCurl_header_callback callback, void *context) {
    CURLcode code = api.easy_setopt(easy, CURLOPT_HEADERFUNCTION, callback);
    return code != CURLE_OK ? code : api.easy_setopt(easy, CURLOPT_HEADERDATA, context);
}
CURLcode CCurl_easy_getinfo_long(CURL *easy, CURLINFO info, long *value) { return api.easy_getinfo(easy, info, value); }
CURLcode CCurl_easy_getinfo_string(CURL *easy, CURLINFO info, const char **value) {
    return api.easy_getinfo(easy, info, value);
}

struct curl_slist *CCurl_slist_append(struct curl_slist *list, const char *text) { return api.slist_append(list, text); }
void CCurl_slist_free_all(struct curl_slist *list) { api.slist_free_all(list); }
