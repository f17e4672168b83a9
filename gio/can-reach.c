/* can_reach: the connectable's addresses by GLib's resolver; a local one is reachable
 * whenever the network is available, any other only while connectivity is full. */
#include "network-monitor.h"
#include "verdict.h"

static gboolean
address_is_reachable (NetobserverNetworkMonitor *self, GSocketAddress *address)
{
  if (!G_IS_INET_SOCKET_ADDRESS (address))
    return TRUE; /* a Unix socket and the like: on this machine */
  if (address_is_local (g_inet_socket_address_get_address (G_INET_SOCKET_ADDRESS (address))))
    return TRUE;
  return netobserver_network_monitor_connectivity (self) == G_NETWORK_CONNECTIVITY_FULL;
}

static void
set_network_unreachable (GError **error)
{
  g_set_error_literal (error, G_IO_ERROR, G_IO_ERROR_NETWORK_UNREACHABLE, "Network unreachable");
}

static void
set_host_unreachable (GError **error)
{
  g_set_error_literal (error, G_IO_ERROR, G_IO_ERROR_HOST_UNREACHABLE, "Host unreachable");
}

gboolean
netobserver_can_reach (GNetworkMonitor *monitor, GSocketConnectable *connectable,
                       GCancellable *cancellable, GError **error)
{
  NetobserverNetworkMonitor *self = NETOBSERVER_NETWORK_MONITOR (monitor);
  if (!netobserver_network_monitor_available (self))
    {
      set_network_unreachable (error);
      return FALSE;
    }
  g_autoptr (GSocketAddressEnumerator) addresses = g_socket_connectable_enumerate (connectable);
  g_autoptr (GError) lookup_error = NULL;
  gboolean resolved = FALSE;
  GSocketAddress *address;
  while ((address = g_socket_address_enumerator_next (addresses, cancellable, &lookup_error)) != NULL)
    {
      resolved = TRUE;
      gboolean reachable = address_is_reachable (self, address);
      g_object_unref (address);
      if (reachable)
        return TRUE;
    }
  if (lookup_error != NULL && !resolved)
    {
      g_propagate_error (error, g_steal_pointer (&lookup_error));
      return FALSE;
    }
  set_host_unreachable (error);
  return FALSE;
}

typedef struct {
  GSocketAddressEnumerator *addresses;
  gboolean resolved;
} Reach;

static void
reach_free (gpointer data)
{
  Reach *reach = data;
  g_object_unref (reach->addresses);
  g_free (reach);
}

static void next_address (GObject *source, GAsyncResult *result, gpointer user_data);

static void
ask_next (GTask *task)
{
  Reach *reach = g_task_get_task_data (task);
  g_socket_address_enumerator_next_async (reach->addresses, g_task_get_cancellable (task), next_address, task);
}

static void
next_address (GObject *source, GAsyncResult *result, gpointer user_data)
{
  GTask *task = user_data;
  Reach *reach = g_task_get_task_data (task);
  GError *error = NULL;
  GSocketAddress *address = g_socket_address_enumerator_next_finish (G_SOCKET_ADDRESS_ENUMERATOR (source), result, &error);
  if (address != NULL)
    {
      reach->resolved = TRUE;
      gboolean reachable = address_is_reachable (g_task_get_source_object (task), address);
      g_object_unref (address);
      if (!reachable)
        {
          ask_next (task);
          return;
        }
      g_task_return_boolean (task, TRUE);
    }
  else if (error != NULL && !reach->resolved)
    g_task_return_error (task, error);
  else
    {
      g_clear_error (&error);
      set_host_unreachable (&error);
      g_task_return_error (task, error);
    }
  g_object_unref (task);
}

void
netobserver_can_reach_async (GNetworkMonitor *monitor, GSocketConnectable *connectable,
                             GCancellable *cancellable, GAsyncReadyCallback callback, gpointer user_data)
{
  GTask *task = g_task_new (monitor, cancellable, callback, user_data);
  g_task_set_source_tag (task, netobserver_can_reach_async);
  if (!netobserver_network_monitor_available (NETOBSERVER_NETWORK_MONITOR (monitor)))
    {
      GError *error = NULL;
      set_network_unreachable (&error);
      g_task_return_error (task, error);
      g_object_unref (task);
      return;
    }
  Reach *reach = g_new0 (Reach, 1);
  reach->addresses = g_socket_connectable_enumerate (connectable);
  g_task_set_task_data (task, reach, reach_free);
  ask_next (task);
}

gboolean
netobserver_can_reach_finish (GNetworkMonitor *monitor, GAsyncResult *result, GError **error)
{
  g_return_val_if_fail (g_task_is_valid (result, monitor), FALSE);
  return g_task_propagate_boolean (G_TASK (result), error);
}
