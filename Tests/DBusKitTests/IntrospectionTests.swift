import DBusKit
import XCTest

final class IntrospectionTests: XCTestCase {
    func testInterfaceXML() {
        let interface = DBusInterface(
            "org.example.Thing",
            methods: [
                DBusMethod("Reset") { _ throws(DBusError) in .reply([]) },
                DBusMethod(
                    "Add", inputs: [DBusArgument("a", .int32), DBusArgument("b", .int32)],
                    outputs: [DBusArgument("sum", .int32)]
                ) { _ throws(DBusError) in .reply([.int32(0)]) },
            ],
            properties: [
                DBusProperty(
                    "Name", .string, access: .readwrite, get: { .string("") }, set: { _ throws(DBusError) in }),
                DBusProperty("Count", .uint64, changeMode: .quiet, get: { .uint64(0) }),
                DBusProperty("Id", .string, changeMode: .const, get: { .string("x") }),
                DBusProperty("Blob", .array(.byte), changeMode: .invalidates, get: { .array(.byte, []) }),
            ],
            signals: [
                DBusSignal("Changed", [DBusArgument("what", .string)]),
                DBusSignal("Poke"),
            ])
        let expected = """
             <interface name="org.example.Thing">
              <method name="Reset"/>
              <method name="Add">
               <arg name="a" type="i" direction="in"/>
               <arg name="b" type="i" direction="in"/>
               <arg name="sum" type="i" direction="out"/>
              </method>
              <signal name="Changed">
               <arg name="what" type="s"/>
              </signal>
              <signal name="Poke"/>
              <property name="Name" type="s" access="readwrite"/>
              <property name="Count" type="t" access="read">
               <annotation name="org.freedesktop.DBus.Property.EmitsChangedSignal" value="false"/>
              </property>
              <property name="Id" type="s" access="read">
               <annotation name="org.freedesktop.DBus.Property.EmitsChangedSignal" value="const"/>
              </property>
              <property name="Blob" type="ay" access="read">
               <annotation name="org.freedesktop.DBus.Property.EmitsChangedSignal" value="invalidates"/>
              </property>
             </interface>

            """
        XCTAssertEqual(Introspection.interface(interface), expected)
    }

    func testDocumentListsChildrenAndEscapes() {
        let document = Introspection.document(
            interfaces: [DBusInterface("org.example.A<&>")], children: ["org", "net"])
        XCTAssertTrue(
            document.hasPrefix("<!DOCTYPE node PUBLIC \"-//freedesktop//DTD D-BUS Object Introspection 1.0//EN\""))
        XCTAssertTrue(document.contains(" <interface name=\"org.example.A&lt;&amp;&gt;\">\n </interface>\n"))
        XCTAssertTrue(document.hasSuffix(" <node name=\"org\"/>\n <node name=\"net\"/>\n</node>\n"))
    }
}
