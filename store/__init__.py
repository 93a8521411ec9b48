"""The object store as the fleet's shared home: shipping completed files from a bounded local spool
(store/ship.py), traces written into a lake's host=/service=/date= layout (store/traces.py), and
results directories written to a prefix (store/results.py).

Public API: `Shipper` (ship(path, dest) for each completed file), `TraceShipping` (a TraceWriter's
on_file), `trace_output`, `results_output`. The object access itself is the contracts'
(iofp/objstore.py), and so is reading results back (iofp/results_dir.py).
"""

from store.results import ResultsOutput, results_output
from store.ship import SHIP_WAIT_S, Shipper, ShipStats
from store.traces import TraceShipping, spool_root, trace_output

__all__ = [
    "SHIP_WAIT_S", "ResultsOutput", "ShipStats", "Shipper", "TraceShipping", "results_output", "spool_root",
    "trace_output",
]  # fmt: skip
