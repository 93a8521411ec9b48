"""fingerprint/quantiles.py against the rule it stands for: each scope's nearest-rank percentile is the
value at rank ceil(q * n) of its requests' values sorted, counted from the rows themselves (every
request a row, not value counts), with values repeated across the (regime class, --between flag)
parts, ops and measures, zero sizes left out of the size, reads and writes together in 'all'."""

from __future__ import annotations

from fractions import Fraction
from types import SimpleNamespace

import duckdb
import numpy as np
import pyarrow as pa
import pytest

from fingerprint import quantiles
from iofp.contract import OPS

SCOPES = {"whole": [0, 1, 2, 3], "steady": [1], "spike": [2, 3], "between": [0, 1, 2, 3]}
Q = {"p50": Fraction(1, 2), "p99": Fraction(99, 100), "p99_9": Fraction(999, 1000)}


def scope_map() -> pa.Table:
    rows = [(rg, btw, sc, s) for sc, (s, classes) in enumerate(SCOPES.items()) for rg in classes
            for btw in (False, True) if btw or s != "between"]  # fmt: skip
    rg, btw, sc, scope = zip(*rows, strict=True)
    return pa.table({"rg": pa.array(rg, pa.uint8()), "btw": pa.array(btw), "sc": pa.array(sc, pa.uint8()),
                     "scope": pa.array(scope)})  # fmt: skip


def nearest_rank(values: list[int]) -> dict[str, int]:
    v = sorted(values)
    n = len(v)
    return {"n": n, **{k: v[int(-(-(q * n) // 1)) - 1] for k, q in Q.items()}}


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_percentiles_are_the_nearest_rank_of_every_request(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 3000))
    rows = {
        "rg": rng.integers(0, 4, n).astype(np.uint8),
        "btw": rng.random(n) < 0.3,
        "op": rng.choice(list(OPS), n),
        "lat": rng.integers(1, int(rng.choice([5, 50, 10**6])), n),  # few values (ties) or many
        "size": rng.choice([0, 512, 4096, 65536], n),
        "inflight": rng.integers(1, 33, n),
    }
    con = duckdb.connect()
    con.register("r", pa.table(rows))
    con.execute("""
        CREATE TEMP TABLE fp_values AS
        SELECT rg, btw, op, 0::UTINYINT AS m, lat AS v, count(*) AS n FROM r GROUP BY ALL
        UNION ALL SELECT rg, btw, op, 1, size, count(*) FROM r GROUP BY ALL
        UNION ALL SELECT rg, btw, op, 2, inflight, count(*) FROM r GROUP BY ALL
    """)
    f = SimpleNamespace(scope_map=scope_map)
    got = quantiles.measure(con, f)  # type: ignore[arg-type]
    want = {}
    for scope, classes in SCOPES.items():
        inside = np.isin(rows["rg"], classes) & (rows["btw"] if scope == "between" else True)
        groups = {("lat", "all"): inside & np.isin(rows["op"], ["read", "write"]),
                  ("size", "all"): inside & (rows["size"] > 0), ("inflight", "all"): inside}  # fmt: skip
        groups |= {("lat", op): inside & (rows["op"] == op) for op in OPS}
        for (measure, op), sel in groups.items():
            column = {"lat": "lat", "size": "size", "inflight": "inflight"}[measure]
            if sel.any():
                want[(scope, measure, op)] = {"scope": scope, "measure": measure, "op": op,
                                              **nearest_rank(rows[column][sel].tolist())}  # fmt: skip
    assert got == want
