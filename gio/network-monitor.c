/* The monitor's life: initialisation (refused when the service is absent or NetworkManager
 * checks connectivity itself), then following the service's owner and its PropertiesChanged,
 * all on the GDBus connection GLib already has: no thread of its own, and a timer only while a
 * read of the owner's values has failed (it is tried again, 1, 2, 4 … 60 s apart). */
#include "network-monitor.h"
#include "service-values.h"

#define SERVICE_NAME "org.netobserver.Monitor"
#define SERVICE_PATH "/org/netobserver/Monitor"
#define SERVICE_INTERFACE "org.netobserver.Monitor"
#define NETWORK_MANAGER_NAME "org.freedesktop.NetworkManager"
#define NETWORK_MANAGER_PATH "/org/freedesktop/NetworkManager"
#define PROPERTIES_INTERFACE "org.freedesktop.DBus.Properties"
/* Initialisation runs inside g_network_monitor_get_default(): a slow bus must not hold a program's start. */
#define INIT_BUDGET_MS 1000
#define READ_TIMEOUT_MS 5000
#define RETRY_LONGEST_S 60

struct _NetobserverNetworkMonitor {
  GObject parent_instance;

  GDBusConnection *bus;
  guint owner_watch;
  gchar *owner;               /* the unique name signals are believed from; NULL while the service is away */
  guint changes_subscription;
  GCancellable *reading;      /* the GetAll in flight after the owner changed */
  GMainContext *context;      /* where GDBus calls us back: the retry timer goes there too */
  GSource *retry;             /* the next GetAll after one failed, while the owner stays */
  guint retry_seconds;

  ServiceValues service;
  gchar *interface;
  Verdict verdict;
};

enum { PROP_0, PROP_NETWORK_AVAILABLE, PROP_NETWORK_METERED, PROP_CONNECTIVITY };

static void initable_iface_init (GInitableIface *iface);
static void network_monitor_iface_init (GNetworkMonitorInterface *iface);

G_DEFINE_DYNAMIC_TYPE_EXTENDED (NetobserverNetworkMonitor, netobserver_network_monitor, G_TYPE_OBJECT, G_TYPE_FLAG_FINAL,
                                G_IMPLEMENT_INTERFACE_DYNAMIC (G_TYPE_INITABLE, initable_iface_init)
                                G_IMPLEMENT_INTERFACE_DYNAMIC (G_TYPE_NETWORK_MONITOR, network_monitor_iface_init))

void
netobserver_network_monitor_register (GTypeModule *module)
{
  netobserver_network_monitor_register_type (module);
}

gboolean
netobserver_network_monitor_available (NetobserverNetworkMonitor *self)
{
  return self->verdict.available;
}

GNetworkConnectivity
netobserver_network_monitor_connectivity (NetobserverNetworkMonitor *self)
{
  return self->verdict.connectivity;
}

/* Values */

static void
take_values (NetobserverNetworkMonitor *self, GVariant *values)
{
  service_values_take (&self->service, &self->interface, values);
}

/* The service's answer to GetAll: its values, and it is there. */
static void
take_all (NetobserverNetworkMonitor *self, GVariant *reply)
{
  g_autoptr (GVariant) values = g_variant_get_child_value (reply, 0);
  take_values (self, values);
  self->service.present = TRUE;
}

/* Tells GLib programs what changed since the last verdict: a notify per property, then one network-changed. */
static void
publish (NetobserverNetworkMonitor *self, const gchar *interface_before)
{
  Verdict before = self->verdict;
  Verdict now = verdict_from_service (&self->service);
  self->verdict = now;
  /* No interface known and an empty one are the same: neither is a change GLib programs hear of. */
  gboolean interface_changed =
      g_strcmp0 (interface_before != NULL ? interface_before : "", self->interface != NULL ? self->interface : "") != 0;
  if (before.available == now.available && before.connectivity == now.connectivity && before.metered == now.metered &&
      !interface_changed)
    return;
  GObject *object = G_OBJECT (self);
  g_object_freeze_notify (object);
  if (before.available != now.available)
    g_object_notify (object, "network-available");
  if (before.connectivity != now.connectivity)
    g_object_notify (object, "connectivity");
  if (before.metered != now.metered)
    g_object_notify (object, "network-metered");
  g_object_thaw_notify (object);
  g_signal_emit_by_name (self, "network-changed", now.available);
}

static void
forget_service (NetobserverNetworkMonitor *self)
{
  self->service = (ServiceValues) { FALSE, SERVICE_CONNECTIVITY_UNKNOWN, FALSE, FALSE };
  g_clear_pointer (&self->interface, g_free);
}

/* Following the owner */

static void
properties_changed (GDBusConnection *bus, const gchar *sender, const gchar *path, const gchar *interface,
                    const gchar *member, GVariant *parameters, gpointer user_data);

static void
cancel_reading (NetobserverNetworkMonitor *self)
{
  if (self->reading != NULL)
    g_cancellable_cancel (self->reading);
  g_clear_object (&self->reading);
}

static void
cancel_retry (NetobserverNetworkMonitor *self)
{
  if (self->retry != NULL)
    g_source_destroy (self->retry);
  g_clear_pointer (&self->retry, g_source_unref);
}

static void
stop_following (NetobserverNetworkMonitor *self)
{
  if (self->changes_subscription != 0)
    g_dbus_connection_signal_unsubscribe (self->bus, self->changes_subscription);
  self->changes_subscription = 0;
  cancel_reading (self);
  cancel_retry (self);
  self->retry_seconds = 0;
  g_clear_pointer (&self->owner, g_free);
}

/* Signals are believed from this unique name only: no other peer's PropertiesChanged, broadcast or unicast, is heard. */
static void
follow (NetobserverNetworkMonitor *self, const gchar *owner)
{
  stop_following (self);
  self->owner = g_strdup (owner);
  self->changes_subscription =
      g_dbus_connection_signal_subscribe (self->bus, owner, PROPERTIES_INTERFACE, "PropertiesChanged", SERVICE_PATH,
                                          SERVICE_INTERFACE, G_DBUS_SIGNAL_FLAGS_NONE, properties_changed, self, NULL);
}

static void read_values (NetobserverNetworkMonitor *self);

static gboolean
retry_due (gpointer user_data)
{
  NetobserverNetworkMonitor *self = user_data;
  g_clear_pointer (&self->retry, g_source_unref);
  read_values (self);
  return G_SOURCE_REMOVE;
}

/* The read failed (refused, timed out) while the owner stays: ask again later, never giving up. */
static void
schedule_retry (NetobserverNetworkMonitor *self)
{
  cancel_retry (self);
  self->retry_seconds = self->retry_seconds == 0 ? 1 : MIN (self->retry_seconds * 2, RETRY_LONGEST_S);
  self->retry = g_timeout_source_new_seconds (self->retry_seconds);
  g_source_set_callback (self->retry, retry_due, self, NULL);
  g_source_attach (self->retry, self->context);
}

static void
values_read (GObject *source, GAsyncResult *result, gpointer user_data)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (GVariant) reply = g_dbus_connection_call_finish (G_DBUS_CONNECTION (source), result, &error);
  if (g_error_matches (error, G_IO_ERROR, G_IO_ERROR_CANCELLED))
    return; /* the monitor may be gone: user_data is not touched */
  NetobserverNetworkMonitor *self = user_data;
  g_clear_object (&self->reading);
  if (reply == NULL)
    {
      /* The owner left mid-call (NameOwnerChanged will say what comes next), or it could not answer in time. */
      if (self->owner != NULL)
        schedule_retry (self);
      return;
    }
  self->retry_seconds = 0;
  g_autofree gchar *interface_before = g_strdup (self->interface);
  take_all (self, reply);
  publish (self, interface_before);
}

static void
read_values (NetobserverNetworkMonitor *self)
{
  cancel_reading (self);
  cancel_retry (self);
  self->reading = g_cancellable_new ();
  g_dbus_connection_call (self->bus, self->owner, SERVICE_PATH, PROPERTIES_INTERFACE, "GetAll",
                          g_variant_new ("(s)", SERVICE_INTERFACE), G_VARIANT_TYPE ("(a{sv})"),
                          G_DBUS_CALL_FLAGS_NO_AUTO_START, READ_TIMEOUT_MS, self->reading, values_read, self);
}

static void
properties_changed (GDBusConnection *bus, const gchar *sender, const gchar *path, const gchar *interface,
                    const gchar *member, GVariant *parameters, gpointer user_data)
{
  NetobserverNetworkMonitor *self = user_data;
  g_autoptr (GVariant) changed = NULL;
  gboolean says_connectivity, invalidated;
  if (!service_changes_parse (parameters, &changed, &says_connectivity, &invalidated))
    return;
  /* Only the owner's signals reach here: while its values could not be read, what it says of Connectivity
   * is believed (a signal without it leaves GLib's old default until the read succeeds). */
  if (!self->service.present && !says_connectivity)
    {
      take_values (self, changed);
      return;
    }
  self->service.present = TRUE;
  if (invalidated)
    read_values (self);
  g_autofree gchar *interface_before = g_strdup (self->interface);
  take_values (self, changed);
  publish (self, interface_before);
}

static void
owner_appeared (GDBusConnection *bus, const gchar *name, const gchar *owner, gpointer user_data)
{
  NetobserverNetworkMonitor *self = user_data;
  if (g_strcmp0 (owner, self->owner) == 0)
    return;
  follow (self, owner);
  read_values (self);
}

static void
owner_vanished (GDBusConnection *bus, const gchar *name, gpointer user_data)
{
  NetobserverNetworkMonitor *self = user_data;
  if (self->owner == NULL && !self->service.present)
    return;
  stop_following (self);
  g_autofree gchar *interface_before = g_steal_pointer (&self->interface);
  forget_service (self);
  publish (self, interface_before);
}

/* Initialisation */

static gint
remaining_ms (gint64 deadline)
{
  gint64 left = (deadline - g_get_monotonic_time ()) / 1000;
  return (gint) CLAMP (left, 1, INIT_BUDGET_MS);
}

static GVariant *
call_bus (GDBusConnection *bus, const gchar *destination, const gchar *path, const gchar *interface,
          const gchar *method, GVariant *arguments, const gchar *reply_type, gint64 deadline,
          GCancellable *cancellable, GError **error)
{
  return g_dbus_connection_call_sync (bus, destination, path, interface, method, arguments,
                                      G_VARIANT_TYPE (reply_type), G_DBUS_CALL_FLAGS_NO_AUTO_START,
                                      remaining_ms (deadline), cancellable, error);
}

/* The unique name owning `name`, or NULL: asked of the bus itself, which never starts anybody. */
static gchar *
name_owner (GDBusConnection *bus, const gchar *name, gint64 deadline, GCancellable *cancellable, GError **error)
{
  g_autoptr (GVariant) reply = call_bus (bus, "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus",
                                         "GetNameOwner", g_variant_new ("(s)", name), "(s)", deadline, cancellable, error);
  if (reply == NULL)
    return NULL;
  gchar *owner = NULL;
  g_variant_get (reply, "(s)", &owner);
  return owner;
}

static gboolean
network_manager_flag (GDBusConnection *bus, const gchar *owner, const gchar *property, gint64 deadline,
                      GCancellable *cancellable)
{
  g_autoptr (GVariant) reply =
      call_bus (bus, owner, NETWORK_MANAGER_PATH, PROPERTIES_INTERFACE, "Get",
                g_variant_new ("(ss)", NETWORK_MANAGER_NAME, property), "(v)", deadline, cancellable, NULL);
  if (reply == NULL)
    return FALSE;
  g_autoptr (GVariant) value = NULL;
  g_variant_get (reply, "(v)", &value);
  return g_variant_is_of_type (value, G_VARIANT_TYPE_BOOLEAN) && g_variant_get_boolean (value);
}

/* TRUE when NetworkManager runs and checks connectivity itself: then the desktop keeps its one verdict. */
static gboolean
network_manager_checks (GDBusConnection *bus, gint64 deadline, GCancellable *cancellable)
{
  g_autofree gchar *owner = name_owner (bus, NETWORK_MANAGER_NAME, deadline, cancellable, NULL);
  return owner != NULL && network_manager_flag (bus, owner, "ConnectivityCheckEnabled", deadline, cancellable) &&
         network_manager_flag (bus, owner, "ConnectivityCheckAvailable", deadline, cancellable);
}

static gboolean
initable_init (GInitable *initable, GCancellable *cancellable, GError **error)
{
  NetobserverNetworkMonitor *self = NETOBSERVER_NETWORK_MONITOR (initable);
  gint64 deadline = g_get_monotonic_time () + INIT_BUDGET_MS * 1000;
  self->context = g_main_context_ref_thread_default ();
  self->bus = g_bus_get_sync (G_BUS_TYPE_SYSTEM, cancellable, error);
  if (self->bus == NULL)
    return FALSE;
  g_autoptr (GError) absent = NULL;
  g_autofree gchar *owner = name_owner (self->bus, SERVICE_NAME, deadline, cancellable, &absent);
  if (owner == NULL)
    {
      g_set_error (error, G_IO_ERROR, G_IO_ERROR_NOT_FOUND, "%s is not on the system bus: %s", SERVICE_NAME,
                   absent->message);
      return FALSE;
    }
  if (network_manager_checks (self->bus, deadline, cancellable))
    {
      g_set_error_literal (error, G_IO_ERROR, G_IO_ERROR_EXISTS, "NetworkManager checks connectivity itself");
      return FALSE;
    }
  /* Subscribed before reading, so no change falls between the read and the first signal. */
  follow (self, owner);
  g_autoptr (GVariant) reply =
      call_bus (self->bus, owner, SERVICE_PATH, PROPERTIES_INTERFACE, "GetAll",
                g_variant_new ("(s)", SERVICE_INTERFACE), "(a{sv})", deadline, cancellable, error);
  if (reply == NULL)
    {
      stop_following (self);
      return FALSE;
    }
  take_all (self, reply);
  self->verdict = verdict_from_service (&self->service);
  self->owner_watch = g_bus_watch_name_on_connection (self->bus, SERVICE_NAME, G_BUS_NAME_WATCHER_FLAGS_NONE,
                                                      owner_appeared, owner_vanished, self, NULL);
  return TRUE;
}

/* GObject */

static void
netobserver_network_monitor_init (NetobserverNetworkMonitor *self)
{
  forget_service (self);
  self->verdict = verdict_from_service (&self->service);
}

static void
netobserver_network_monitor_finalize (GObject *object)
{
  NetobserverNetworkMonitor *self = NETOBSERVER_NETWORK_MONITOR (object);
  if (self->owner_watch != 0)
    g_bus_unwatch_name (self->owner_watch);
  if (self->bus != NULL)
    stop_following (self);
  g_clear_pointer (&self->interface, g_free);
  g_clear_object (&self->bus);
  g_clear_pointer (&self->context, g_main_context_unref);
  G_OBJECT_CLASS (netobserver_network_monitor_parent_class)->finalize (object);
}

static void
netobserver_network_monitor_get_property (GObject *object, guint id, GValue *value, GParamSpec *spec)
{
  NetobserverNetworkMonitor *self = NETOBSERVER_NETWORK_MONITOR (object);
  switch (id)
    {
    case PROP_NETWORK_AVAILABLE:
      g_value_set_boolean (value, self->verdict.available);
      break;
    case PROP_NETWORK_METERED:
      g_value_set_boolean (value, self->verdict.metered);
      break;
    case PROP_CONNECTIVITY:
      g_value_set_enum (value, self->verdict.connectivity);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, id, spec);
    }
}

static void
netobserver_network_monitor_class_init (NetobserverNetworkMonitorClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);
  object_class->finalize = netobserver_network_monitor_finalize;
  object_class->get_property = netobserver_network_monitor_get_property;
  g_object_class_override_property (object_class, PROP_NETWORK_AVAILABLE, "network-available");
  g_object_class_override_property (object_class, PROP_NETWORK_METERED, "network-metered");
  g_object_class_override_property (object_class, PROP_CONNECTIVITY, "connectivity");
}

static void
netobserver_network_monitor_class_finalize (NetobserverNetworkMonitorClass *klass)
{
}

static void
initable_iface_init (GInitableIface *iface)
{
  iface->init = initable_init;
}

static void
network_monitor_iface_init (GNetworkMonitorInterface *iface)
{
  iface->can_reach = netobserver_can_reach;
  iface->can_reach_async = netobserver_can_reach_async;
  iface->can_reach_finish = netobserver_can_reach_finish;
}
