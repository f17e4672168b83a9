/* Reading what the service sends: a GetAll reply's a{sv} and a PropertiesChanged body, whatever
 * their bytes. Free of GObject state and of the bus, so a fuzzer drives it alone (Fuzz/gio). */
#ifndef NETOBSERVER_SERVICE_VALUES_H
#define NETOBSERVER_SERVICE_VALUES_H

#include "verdict.h"

/* Takes what an a{sv} says of Connectivity, Interface and Metered into `service` and `*interface`,
 * ignoring anything of the wrong type or not a word of the contract. `values` must be an a{sv}. */
void service_values_take (ServiceValues *service, gchar **interface, GVariant *values);

/* A PropertiesChanged body, (sa{sv}as): its changed values (a new reference), whether it says
 * Connectivity, and whether Connectivity, Interface or Metered were invalidated. FALSE (and
 * nothing set) for a body of any other type. */
gboolean service_changes_parse (GVariant *body, GVariant **changed, gboolean *says_connectivity, gboolean *invalidated);

#endif
