/* libFuzzer entry for the GIO module's reading of what the service sends, which runs inside every
 * GLib program: the bytes as a D-Bus message (GDBusMessage's parser, as GDBus hands the module a
 * reply or a signal) and as the bodies the module reads (a GetAll reply's (a{sv}), a
 * PropertiesChanged's (sa{sv}as)). Built by `make fuzz` with clang -fsanitize=fuzzer,address;
 * `make test` replays the corpus and any crash input (replay.c). */
#include <stdint.h>

#include "../../gio/service-values.h"

static void
read_body (GVariant *body)
{
  ServiceValues service = { TRUE, SERVICE_CONNECTIVITY_UNKNOWN, FALSE, FALSE };
  gchar *interface = NULL;
  if (g_variant_is_of_type (body, G_VARIANT_TYPE ("(a{sv})")))
    {
      GVariant *values = g_variant_get_child_value (body, 0);
      service_values_take (&service, &interface, values);
      g_variant_unref (values);
    }
  GVariant *changed = NULL;
  gboolean says_connectivity = FALSE, invalidated = FALSE;
  if (service_changes_parse (body, &changed, &says_connectivity, &invalidated))
    {
      service_values_take (&service, &interface, changed);
      g_variant_unref (changed);
    }
  g_assert (service.connectivity <= SERVICE_CONNECTIVITY_FULL);
  g_assert (service.has_interface == (interface != NULL && interface[0] != '\0'));
  Verdict verdict = verdict_from_service (&service);
  g_assert (verdict.connectivity >= G_NETWORK_CONNECTIVITY_LOCAL && verdict.connectivity <= G_NETWORK_CONNECTIVITY_FULL);
  g_free (interface);
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  GDBusMessage *message = g_dbus_message_new_from_blob ((guchar *) data, size, G_DBUS_CAPABILITY_FLAGS_NONE, NULL);
  if (message != NULL)
    {
      GVariant *body = g_dbus_message_get_body (message);
      if (body != NULL)
        read_body (body);
      g_object_unref (message);
    }
  const gchar *types[] = { "(a{sv})", "(sa{sv}as)" };
  for (gsize i = 0; i < G_N_ELEMENTS (types); i++)
    {
      GBytes *bytes = g_bytes_new (data, size);
      GVariant *body = g_variant_ref_sink (g_variant_new_from_bytes (G_VARIANT_TYPE (types[i]), bytes, FALSE));
      read_body (body);
      g_variant_unref (body);
      g_bytes_unref (bytes);
    }
  return 0;
}
