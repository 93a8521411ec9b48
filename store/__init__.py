"""The object store as the fleet's shared home: shipping completed files from a bounded local spool
(store/ship.py), and traces written into a lake's host=/service=/date= layout (store/traces.py).

Public API: `Shipper` (ship(path, dest) for each completed file), `TraceShipping` (a TraceWriter's
on_file), `trace_output`. The object access itself is the contracts' (iofp/objstore.py).
"""

from store.ship import Shipper, ShipStats
from store.traces import TraceShipping, spool_root, trace_output

__all__ = ["ShipStats", "Shipper", "TraceShipping", "spool_root", "trace_output"]
