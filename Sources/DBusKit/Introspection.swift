/// Introspection XML, generated from the same declarations that dispatch.
public enum Introspection {
    public static let doctype = """
        <!DOCTYPE node PUBLIC "-//freedesktop//DTD D-BUS Object Introspection 1.0//EN"
         "http://www.freedesktop.org/standards/dbus/1.0/introspect.dtd">
        """

    /// A whole `<node>` document with `interfaces` and `children` (child node names).
    public static func document(interfaces: [DBusInterface], children: [String]) -> String {
        var xml = doctype + "\n<node>\n"
        for interface in interfaces { xml += self.interface(interface) }
        for child in children { xml += " <node name=\"\(escape(child))\"/>\n" }
        xml += "</node>\n"
        return xml
    }

    /// One `<interface>` element, indented by one space, ending with a newline.
    public static func interface(_ interface: DBusInterface) -> String {
        var xml = " <interface name=\"\(escape(interface.name))\">\n"
        for method in interface.methods {
            let args = method.inputs.map { ($0, "in") } + method.outputs.map { ($0, "out") }
            if args.isEmpty {
                xml += "  <method name=\"\(escape(method.name))\"/>\n"
            } else {
                xml += "  <method name=\"\(escape(method.name))\">\n"
                for (arg, direction) in args {
                    xml +=
                        "   <arg name=\"\(escape(arg.name))\" type=\"\(escape(arg.type.signature))\" direction=\"\(direction)\"/>\n"
                }
                xml += "  </method>\n"
            }
        }
        for signal in interface.signals {
            if signal.arguments.isEmpty {
                xml += "  <signal name=\"\(escape(signal.name))\"/>\n"
            } else {
                xml += "  <signal name=\"\(escape(signal.name))\">\n"
                for arg in signal.arguments {
                    xml += "   <arg name=\"\(escape(arg.name))\" type=\"\(escape(arg.type.signature))\"/>\n"
                }
                xml += "  </signal>\n"
            }
        }
        for property in interface.properties {
            let open =
                "  <property name=\"\(escape(property.name))\" type=\"\(escape(property.type.signature))\" access=\"\(property.access.rawValue)\""
            if let annotation = property.changeMode.annotation {
                xml += open + ">\n"
                xml +=
                    "   <annotation name=\"org.freedesktop.DBus.Property.EmitsChangedSignal\" value=\"\(annotation)\"/>\n"
                xml += "  </property>\n"
            } else {
                xml += open + "/>\n"
            }
        }
        xml += " </interface>\n"
        return xml
    }

    static func escape(_ s: String) -> String {
        var out = ""
        for c in s {
            switch c {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&apos;"
            default: out.append(c)
            }
        }
        return out
    }
}
