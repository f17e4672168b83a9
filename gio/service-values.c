/* Reading what the service sends (see service-values.h). */
#include "service-values.h"

void
service_values_take (ServiceValues *service, gchar **interface, GVariant *values)
{
  GVariantIter iter;
  const gchar *name;
  GVariant *value;
  g_variant_iter_init (&iter, values);
  while (g_variant_iter_next (&iter, "{&sv}", &name, &value))
    {
      if (g_str_equal (name, "Connectivity") && g_variant_is_of_type (value, G_VARIANT_TYPE_STRING))
        service_connectivity_parse (g_variant_get_string (value, NULL), &service->connectivity);
      else if (g_str_equal (name, "Interface") && g_variant_is_of_type (value, G_VARIANT_TYPE_STRING))
        {
          g_free (*interface);
          *interface = g_variant_dup_string (value, NULL);
        }
      else if (g_str_equal (name, "Metered") && g_variant_is_of_type (value, G_VARIANT_TYPE_BOOLEAN))
        service->metered = g_variant_get_boolean (value);
      g_variant_unref (value);
    }
  service->has_interface = *interface != NULL && (*interface)[0] != '\0';
}

gboolean
service_changes_parse (GVariant *body, GVariant **changed, gboolean *says_connectivity, gboolean *invalidated)
{
  if (!g_variant_is_of_type (body, G_VARIANT_TYPE ("(sa{sv}as)")))
    return FALSE;
  *changed = g_variant_get_child_value (body, 1);
  g_autoptr (GVariant) connectivity = g_variant_lookup_value (*changed, "Connectivity", G_VARIANT_TYPE_STRING);
  *says_connectivity = connectivity != NULL;
  *invalidated = FALSE;
  g_autoptr (GVariant) names = g_variant_get_child_value (body, 2);
  GVariantIter iter;
  const gchar *name;
  g_variant_iter_init (&iter, names);
  while (g_variant_iter_next (&iter, "&s", &name))
    if (g_str_equal (name, "Connectivity") || g_str_equal (name, "Interface") || g_str_equal (name, "Metered"))
      *invalidated = TRUE;
  return TRUE;
}
