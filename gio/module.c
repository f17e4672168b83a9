/* libgionetobserver.so: the entry points GIO looks for in a module. */
#include "network-monitor.h"

G_MODULE_EXPORT void
g_io_module_load (GIOModule *module)
{
  netobserver_network_monitor_register (G_TYPE_MODULE (module));
  /* Above NetworkManager's 30 and netlink's 20; below the portal's 40, which GLib uses only in a sandbox. */
  g_io_extension_point_implement (G_NETWORK_MONITOR_EXTENSION_POINT_NAME, NETOBSERVER_TYPE_NETWORK_MONITOR,
                                  "netobserver", 35);
  /* Resident: GDBus may still hold a callback of ours after an instance that failed to initialise is gone. */
  g_type_module_use (G_TYPE_MODULE (module));
}

G_MODULE_EXPORT void
g_io_module_unload (GIOModule *module)
{
}

G_MODULE_EXPORT gchar **
g_io_module_query (void)
{
  gchar *extension_points[] = { G_NETWORK_MONITOR_EXTENSION_POINT_NAME, NULL };
  return g_strdupv (extension_points);
}
