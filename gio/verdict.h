/* What GLib programs are told, from what the service says: the mapping table of
 * INTERFACE.md "Where applications already look", free of GObject and D-Bus. */
#ifndef NETOBSERVER_VERDICT_H
#define NETOBSERVER_VERDICT_H

#include <gio/gio.h>

typedef enum {
  SERVICE_CONNECTIVITY_UNKNOWN,
  SERVICE_CONNECTIVITY_NONE,
  SERVICE_CONNECTIVITY_LIMITED,
  SERVICE_CONNECTIVITY_PORTAL,
  SERVICE_CONNECTIVITY_FULL,
} ServiceConnectivity;

/* The default target's values, as last read; present is FALSE while nobody owns the name. */
typedef struct {
  gboolean present;
  ServiceConnectivity connectivity;
  gboolean has_interface;
  gboolean metered;
} ServiceValues;

typedef struct {
  gboolean available;
  GNetworkConnectivity connectivity;
  gboolean metered;
} Verdict;

/* FALSE for a word the contract does not have. */
gboolean service_connectivity_parse (const gchar *word, ServiceConnectivity *connectivity);

/* GLib's old default (available, full, not metered) while the service is away. */
Verdict verdict_from_service (const ServiceValues *values);

/* Loopback, private (RFC 1918), link-local and unique-local addresses: on this side of any upstream. */
gboolean address_is_local (GInetAddress *address);

#endif
