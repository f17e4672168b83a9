#ifndef NETOBSERVER_CDBUS_SHIM_H
#define NETOBSERVER_CDBUS_SHIM_H

#include <dbus/dbus.h>

/* libdbus defines its type codes as `((int) 'y')` macros and its flags as
 * expressions, which Swift's importer drops. Bridge each one here from the
 * real macro so no number is copied by hand. */

static const int CDBus_TYPE_INVALID = DBUS_TYPE_INVALID;
static const int CDBus_TYPE_BYTE = DBUS_TYPE_BYTE;
static const int CDBus_TYPE_BOOLEAN = DBUS_TYPE_BOOLEAN;
static const int CDBus_TYPE_INT16 = DBUS_TYPE_INT16;
static const int CDBus_TYPE_UINT16 = DBUS_TYPE_UINT16;
static const int CDBus_TYPE_INT32 = DBUS_TYPE_INT32;
static const int CDBus_TYPE_UINT32 = DBUS_TYPE_UINT32;
static const int CDBus_TYPE_INT64 = DBUS_TYPE_INT64;
static const int CDBus_TYPE_UINT64 = DBUS_TYPE_UINT64;
static const int CDBus_TYPE_DOUBLE = DBUS_TYPE_DOUBLE;
static const int CDBus_TYPE_STRING = DBUS_TYPE_STRING;
static const int CDBus_TYPE_OBJECT_PATH = DBUS_TYPE_OBJECT_PATH;
static const int CDBus_TYPE_SIGNATURE = DBUS_TYPE_SIGNATURE;
static const int CDBus_TYPE_UNIX_FD = DBUS_TYPE_UNIX_FD;
static const int CDBus_TYPE_ARRAY = DBUS_TYPE_ARRAY;
static const int CDBus_TYPE_VARIANT = DBUS_TYPE_VARIANT;
static const int CDBus_TYPE_STRUCT = DBUS_TYPE_STRUCT;
static const int CDBus_TYPE_DICT_ENTRY = DBUS_TYPE_DICT_ENTRY;

static const int CDBus_MESSAGE_TYPE_METHOD_CALL = DBUS_MESSAGE_TYPE_METHOD_CALL;
static const int CDBus_MESSAGE_TYPE_METHOD_RETURN = DBUS_MESSAGE_TYPE_METHOD_RETURN;
static const int CDBus_MESSAGE_TYPE_ERROR = DBUS_MESSAGE_TYPE_ERROR;
static const int CDBus_MESSAGE_TYPE_SIGNAL = DBUS_MESSAGE_TYPE_SIGNAL;

static const unsigned int CDBus_NAME_FLAG_ALLOW_REPLACEMENT = DBUS_NAME_FLAG_ALLOW_REPLACEMENT;
static const unsigned int CDBus_NAME_FLAG_REPLACE_EXISTING = DBUS_NAME_FLAG_REPLACE_EXISTING;
static const unsigned int CDBus_NAME_FLAG_DO_NOT_QUEUE = DBUS_NAME_FLAG_DO_NOT_QUEUE;
static const int CDBus_REQUEST_NAME_REPLY_PRIMARY_OWNER = DBUS_REQUEST_NAME_REPLY_PRIMARY_OWNER;
static const int CDBus_REQUEST_NAME_REPLY_IN_QUEUE = DBUS_REQUEST_NAME_REPLY_IN_QUEUE;
static const int CDBus_REQUEST_NAME_REPLY_EXISTS = DBUS_REQUEST_NAME_REPLY_EXISTS;
static const int CDBus_REQUEST_NAME_REPLY_ALREADY_OWNER = DBUS_REQUEST_NAME_REPLY_ALREADY_OWNER;

static const unsigned int CDBus_WATCH_READABLE = DBUS_WATCH_READABLE;
static const unsigned int CDBus_WATCH_WRITABLE = DBUS_WATCH_WRITABLE;
static const unsigned int CDBus_WATCH_ERROR = DBUS_WATCH_ERROR;
static const unsigned int CDBus_WATCH_HANGUP = DBUS_WATCH_HANGUP;

static const int CDBus_TIMEOUT_INFINITE = DBUS_TIMEOUT_INFINITE;
static const int CDBus_TIMEOUT_USE_DEFAULT = DBUS_TIMEOUT_USE_DEFAULT;

/* A DBusError lives on the caller's stack; these keep its fields readable
 * without Swift having to know the struct's bitfields. */
static inline const char *CDBus_error_name(const DBusError *error) { return error->name; }
static inline const char *CDBus_error_message(const DBusError *error) { return error->message; }

#endif
