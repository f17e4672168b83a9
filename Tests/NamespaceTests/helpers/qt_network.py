#!/usr/bin/python3
"""A Qt program asking QNetworkInformation's glib backend (GNetworkMonitor underneath). One JSON
line per event: the backend loaded, then each reachability, captive-portal and metered change."""
import json
import sys
import time

from PyQt6.QtCore import QCoreApplication
from PyQt6.QtNetwork import QNetworkInformation

app = QCoreApplication(sys.argv)


def say(kind, **fields):
    fields.update(kind=kind, t=time.monotonic())
    print(json.dumps(fields), flush=True)


if not QNetworkInformation.loadBackendByName("glib"):
    say("start", backend="", backends=QNetworkInformation.availableBackends())
    sys.exit(1)
info = QNetworkInformation.instance()


def state():
    return dict(reachability=info.reachability().name, portal=info.isBehindCaptivePortal(), metered=info.isMetered())


say("start", backend=info.backendName(), **state())
info.reachabilityChanged.connect(lambda *_: say("reachability", **state()))
info.isBehindCaptivePortalChanged.connect(lambda *_: say("portal", **state()))
info.isMeteredChanged.connect(lambda *_: say("metered", **state()))
app.exec()
