"""Gratuitous ARP: telling the neighbours of a device that an address is there.

When a router's gateway address or a floating IP appears on its ``qg-``
device (a new router, or one moved from another host), the upstream router
and hosts may still map it to another MAC, or to none; announcing it sets
that right at once instead of after their ARP entries expire. The announce is
not waited for: ``arping`` sends one packet a second.
"""

from __future__ import annotations

import logging
import shutil
import subprocess
import threading

LOG = logging.getLogger(__name__)


def announce(namespace: str, device: str, address: str, count: int) -> bool:
    """Send ``count`` unsolicited ARP packets for ``address`` out of ``device``
    (in the background); False if there is no ``arping`` (iputils-arping)."""
    if count <= 0:
        return True
    if shutil.which("arping") is None:
        LOG.warning("no arping: %s on %s not announced", address, device)
        return False
    proc = subprocess.Popen(
        ["ip", "netns", "exec", namespace, "arping", "-U", "-I", device, "-c", str(count),
         "-w", str(count + 1), address],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    threading.Thread(target=proc.wait, name="arping", daemon=True).start()  # reaped
    return True
