#include "verdict.h"

#include <string.h>

gboolean
service_connectivity_parse (const gchar *word, ServiceConnectivity *connectivity)
{
  static const struct { const gchar *word; ServiceConnectivity value; } words[] = {
    { "unknown", SERVICE_CONNECTIVITY_UNKNOWN },
    { "none", SERVICE_CONNECTIVITY_NONE },
    { "limited", SERVICE_CONNECTIVITY_LIMITED },
    { "portal", SERVICE_CONNECTIVITY_PORTAL },
    { "full", SERVICE_CONNECTIVITY_FULL },
  };
  for (gsize i = 0; i < G_N_ELEMENTS (words); i++)
    if (strcmp (word, words[i].word) == 0)
      {
        *connectivity = words[i].value;
        return TRUE;
      }
  return FALSE;
}

Verdict
verdict_from_service (const ServiceValues *values)
{
  Verdict verdict = { TRUE, G_NETWORK_CONNECTIVITY_FULL, FALSE };
  if (!values->present)
    return verdict;
  verdict.metered = values->metered;
  switch (values->connectivity)
    {
    case SERVICE_CONNECTIVITY_NONE:
      verdict.available = FALSE;
      verdict.connectivity = G_NETWORK_CONNECTIVITY_LOCAL;
      break;
    case SERVICE_CONNECTIVITY_LIMITED:
      verdict.connectivity = G_NETWORK_CONNECTIVITY_LIMITED;
      break;
    case SERVICE_CONNECTIVITY_PORTAL:
      verdict.connectivity = G_NETWORK_CONNECTIVITY_PORTAL;
      break;
    case SERVICE_CONNECTIVITY_FULL:
      break;
    case SERVICE_CONNECTIVITY_UNKNOWN:
      /* Not yet known: a route is taken as the network being there, so nothing flickers offline at start. */
      verdict.available = values->has_interface;
      verdict.connectivity = values->has_interface ? G_NETWORK_CONNECTIVITY_FULL : G_NETWORK_CONNECTIVITY_LOCAL;
      break;
    }
  return verdict;
}

gboolean
address_is_local (GInetAddress *address)
{
  if (g_inet_address_get_is_loopback (address) || g_inet_address_get_is_link_local (address) ||
      g_inet_address_get_is_site_local (address))
    return TRUE;
  if (g_inet_address_get_family (address) != G_SOCKET_FAMILY_IPV6)
    return FALSE;
  const guint8 *bytes = g_inet_address_to_bytes (address);
  return (bytes[0] & 0xfe) == 0xfc; /* fc00::/7 */
}
