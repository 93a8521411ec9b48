"""`iofp compare`: candidates side by side from their replay, probe and headroom results, for a
procurement review (table.py: `compare` reads the results, `render` writes the table).

Other families import only these names; the modules behind them are this package's own.
"""

from replay.compare.table import Comparison, Row, compare, rank, render

__all__ = ["Comparison", "Row", "compare", "rank", "render"]
