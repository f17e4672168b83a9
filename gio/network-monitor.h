/* A GNetworkMonitor that follows the default target of org.netobserver.Monitor on the system bus. */
#ifndef NETOBSERVER_NETWORK_MONITOR_H
#define NETOBSERVER_NETWORK_MONITOR_H

#include <gio/gio.h>

#define NETOBSERVER_TYPE_NETWORK_MONITOR (netobserver_network_monitor_get_type ())
G_DECLARE_FINAL_TYPE (NetobserverNetworkMonitor, netobserver_network_monitor, NETOBSERVER, NETWORK_MONITOR, GObject)

void netobserver_network_monitor_register (GTypeModule *module);

/* Whether GLib programs are told the network is there; what can_reach starts from. */
gboolean netobserver_network_monitor_available (NetobserverNetworkMonitor *self);
GNetworkConnectivity netobserver_network_monitor_connectivity (NetobserverNetworkMonitor *self);

/* GNetworkMonitor's can_reach family, in can-reach.c. */
gboolean netobserver_can_reach (GNetworkMonitor *monitor, GSocketConnectable *connectable,
                                GCancellable *cancellable, GError **error);
void netobserver_can_reach_async (GNetworkMonitor *monitor, GSocketConnectable *connectable,
                                  GCancellable *cancellable, GAsyncReadyCallback callback, gpointer user_data);
gboolean netobserver_can_reach_finish (GNetworkMonitor *monitor, GAsyncResult *result, GError **error);

#endif
