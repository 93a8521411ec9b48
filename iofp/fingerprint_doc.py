"""The fingerprint document: one typed, versioned definition (docs/fingerprint-schema.md documents
every field, and tests/test_fingerprint_doc.py keeps the two in step).

`fingerprint.compute` fills a `Fingerprint`; the summary, report, diff, catalog and `iofp fio-job` read
one, from a file through `load` (or a parsed JSON object through `from_dict`), which checks it: a
hand-edited, truncated or foreign document is one BadInput naming where and the key, never a
KeyError later. Units are in the field names (`_s`, `_ns`, `_us`, `_bytes`, `_per_s`, `_iops`,
`_mbps`); shares are fractions in [0, 1]; a figure the trace cannot support is null, never a guess.

Counting, as iostat and fio count: an I/O (`ios`, IOPS, MB/s, read share, mean size) is a data
request (read, write or discard); a flush is a zero-byte cache drain, counted on its own
(`flushes`, `flushes_per_s`, iostat's f/s). `requests` counts both.

This module imports no stage: it sits with the trace contract at the bottom of the layout.
"""

from __future__ import annotations

import dataclasses
import json
import types
import typing
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from iofp import artifact_json
from iofp.errors import BadInput

FINGERPRINT_VERSION = 3
# Versions this iofp reads. v3 added what a v2 document reads as absent (null): latency buckets, the
# queue and application latencies, the noise on a log scale; and the bound verdict `capped`; the
# biggest spike's own scope (spike1), sequentiality per process, the busiest second's time and the
# hot windows counted (in no spike, and the lone ones).
READS_VERSIONS = (2, 3)
MAKE_ONE = "make one with iofp fingerprint TRACE --json OUT"
SCOPES = ("whole", "steady", "baseline", "spike", "between", "spike1")
OPS = ("all", "read", "write", "discard", "flush")  # `all` latency is reads and writes (see Latency)


@dataclass
class Histogram:
    limits: list[float]
    counts: list[int]


@dataclass
class LogHistogram:
    """Latencies in buckets 10% wide: `counts[k]` holds the values v (ns) with round(10 ln v) = first
    + k, so bucket b spans exp((b - 0.5) / 10) to exp((b + 0.5) / 10) ns. Dense from the first
    non-empty bucket to the last: a distribution the diff can test, in a hundred numbers or so."""

    first: int
    counts: list[int]


@dataclass
class OpHistograms:
    all: Histogram | None
    read: Histogram | None
    write: Histogram | None


@dataclass
class Provenance:
    host: str | None
    kernel: str | None
    devices: dict[str, dict[str, Any]]
    trace_tool_version: str | None
    fingerprint_tool_version: str
    trace_schema_version: int | None
    source: str | None
    capture_start_ns: int | None
    capture_window_ns: list[int]
    duration_s: float
    duration_basis: str
    io_span_s: float
    labels: dict[str, str]
    loss: dict[str, int]
    lost_events: int
    filters: dict[str, Any]
    extra: dict[str, Any]


@dataclass
class Params:
    window_ns: int
    window_rule: str
    device: str | None
    between: list[str] | None
    bins: dict[str, list[float]]
    steady_rule: str
    spike_rule: str


@dataclass
class Spike:
    rank: int
    start_s: float
    end_s: float
    duration_s: float
    windows: int
    ios: int
    bytes: int
    peak_iops: float
    peak_mbps: float
    baseline_iops: float
    excess_ios: float
    excess_bytes: float
    io_share: float | None
    tripped: str
    significance: float


@dataclass
class SteadyCheck:
    met: bool
    windows: int
    ranges_s: list[list[float]]
    ranges_total: int
    closest_start_s: float | None
    closest_range_pct: float | None
    closest_slope_pct: float | None
    closest_mean_iops: float | None


@dataclass
class Baseline:
    windows: int
    ranges_s: list[list[float]]
    median_iops: float
    median_mbps: float
    sigma_iops: float
    sigma_mbps: float
    overdispersion: float


@dataclass
class Thresholds:
    alpha: float
    z: float
    hot_iops: float
    hot_mbps: float
    edge_iops: float
    edge_mbps: float


@dataclass
class Regimes:
    windows: int
    window_ios_median: float
    sparse_hint: str | None
    steady: SteadyCheck
    baseline: Baseline
    thresholds: Thresholds
    spike_windows: int
    spikes_total: int
    spikes: list[Spike]
    # added without a version bump (a document written before reads them as null)
    hot_windows: int | None = None
    hot_outside_spikes: int | None = None
    blips: int | None = None


@dataclass
class Intensity:
    iops: float | None
    mbps: float | None
    flushes_per_s: float | None


@dataclass
class Mix:
    reads: int
    writes: int
    discards: int
    flushes: int
    read_share: float | None
    read_share_bytes: float | None
    read_bytes: int
    write_bytes: int
    discard_bytes: int


@dataclass
class Size:
    mean_bytes: float | None
    median_bytes: float | None
    not_4k_multiple_share: float | None
    not_4k_aligned_share: float | None
    hist: OpHistograms


@dataclass
class Sequential:
    share: float | None
    share_any_device: float | None
    read_share: float | None
    write_share: float | None
    runs: int
    mean_run_ios: float | None
    mean_run_bytes: float | None
    # added without a version bump (a document written before reads it as null)
    share_per_process: float | None = None


@dataclass
class Seek:
    median_abs_lbn: int | None
    hist: OpHistograms


@dataclass
class Inflight:
    known: int
    mean: float | None
    p99: int | None
    max: int | None
    hist: OpHistograms


@dataclass
class Interarrival:
    mean_us: float | None
    cv: float | None
    hist: Histogram | None


@dataclass
class Burst:
    bins: int
    peak_ios: int
    mean_ios: float
    peak_to_mean: float | None
    index_of_dispersion: float | None
    peak_start_s: float | None = None  # added without a version bump: a document written before has none


@dataclass
class SyncCall:
    calls: int
    rate_per_s: float | None
    p50_us: float | None
    p99_us: float | None
    mean_us: float | None
    buckets: LogHistogram | None = None


@dataclass
class Durability:
    flags_known: bool
    preflush: int | None
    fua: int | None
    sync_writes: int | None
    flush_fua_share: float | None
    sync_write_share: float | None
    flush_fua_per_s: float | None
    flush_gap_p50_us: float | None
    flush_gap_p99_us: float | None
    sync_calls: dict[str, SyncCall]
    commits_per_s: float | None


@dataclass
class OpLatency:
    ios: int
    mean_us: float
    p50_us: float
    p99_us: float
    p99_9_us: float
    max_us: float
    hist_us: Histogram | None
    buckets: LogHistogram | None = None


@dataclass
class Footprint:
    blocks_4k: int
    bytes: int
    hot_1pct_blocks: int
    hot_1pct_io_share: float | None


@dataclass
class Process:
    pid: int
    comm: str | None
    ios: int
    bytes: int
    reads: int
    writes: int
    flushes: int
    # added without a version bump (a document written before reads them as null)
    sequential_share: float | None = None
    sync_calls: int | None = None


@dataclass
class Shape:
    name: str
    basis: dict[str, float | bool | None]
    rule: str


@dataclass
class Bound:
    verdict: str
    side: str
    why: str
    numbers: dict[str, float | None]


@dataclass
class Noise:
    """How much a scope's headline figures vary within the trace: what `iofp diff` flags against."""

    batches: int
    batch_windows: int
    method: str
    sd: dict[str, float | None]
    se: dict[str, float | None]
    sd_log: dict[str, float | None] | None = None


@dataclass
class Span:
    from_: str
    to: str
    lo_ns: int
    hi_ns: int


@dataclass
class Scope:
    name: str
    windows: int
    seconds: float
    requests: int
    ios: int
    bytes: int
    devices: int
    intensity: Intensity
    mix: Mix
    size: Size
    sequential: Sequential
    seek: Seek
    inflight: Inflight | None
    interarrival: Interarrival
    burstiness: dict[str, Burst]
    durability: Durability
    latency: dict[str, OpLatency] | None
    footprint: Footprint | None
    top_processes: list[Process]
    shape: Shape
    bound: Bound
    span: Span | None = None
    noise: Noise | None = None
    queue_latency: dict[str, OpLatency] | None = None
    app_latency: dict[str, OpLatency] | None = None


@dataclass
class Fingerprint:
    fingerprint_version: int
    provenance: Provenance
    params: Params
    regimes: Regimes
    whole: Scope
    steady: Scope | None = None
    baseline: Scope | None = None
    spike: Scope | None = None
    between: Scope | None = None
    spike1: Scope | None = None  # the biggest spike's own summary (added without a version bump)

    def scopes(self) -> list[Scope]:
        """The scopes this fingerprint has, in SCOPES order."""
        return [s for s in (getattr(self, n) for n in SCOPES) if s is not None]

    def typical_scope(self) -> str:
        """The scope that stands for the trace's usual load, which a review compares like for like:
        the steady state when it covers at least half of the baseline, else the baseline (the
        windows in no spike), else the whole trace. A few steady windows of a sparse production
        trace say little about the rest, and being picked for flatness they understate its noise
        (two halves of one MySQL hour: 5 steady windows each, IOPS -16% "beyond the noise", where
        their baselines of 338 and 344 windows differ by 1%). fingerprint/sql/catalog_entries.sql
        applies the same rule to stored documents."""
        steady, baseline = self.steady, self.baseline
        if steady is not None and (baseline is None or 2 * steady.windows >= baseline.windows):
            return "steady"
        return "baseline" if baseline is not None else "whole"

    def to_dict(self) -> dict[str, Any]:
        return to_dict(self)


# ------------------------------------------------------------------------------------------------
# JSON <-> dataclasses. A field whose Python name would be a keyword ends in "_" (Span.from_); its
# JSON key does not.

T = TypeVar("T")


def json_key(name: str) -> str:
    return name.removesuffix("_")


def to_dict(obj: Any) -> Any:
    """The JSON-ready form of a document part (dataclasses, lists, dicts, numpy scalars)."""
    if dataclasses.is_dataclass(obj):
        return {json_key(f.name): to_dict(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, dict):
        return {str(k): to_dict(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [to_dict(v) for v in obj]
    if hasattr(obj, "item") and not isinstance(obj, (str, bytes)):  # a numpy scalar
        return obj.item()
    return obj


def from_dict(doc: Any, where: str) -> Fingerprint:
    """`doc` (parsed JSON) as a Fingerprint, checked: BadInput names `where` and the first bad key."""
    if not isinstance(doc, dict) or "fingerprint_version" not in doc:
        raise BadInput(f"{where}: not an iofp fingerprint; {MAKE_ONE}")
    if doc["fingerprint_version"] not in READS_VERSIONS:
        reads = " and ".join(f"v{v}" for v in READS_VERSIONS)
        raise BadInput(
            f"{where}: fingerprint v{doc['fingerprint_version']!r}; this iofp reads {reads} "
            f"({MAKE_ONE} again from its trace)"
        )
    fp = _convert(Fingerprint, doc, where, "")
    for name in SCOPES:  # code picks a scope by its name: a scope is what its key says
        scope = getattr(fp, name)
        if scope is not None and scope.name != name:
            raise BadInput(f"{where}: `{name}.name` is {scope.name[:40]!r}, not {name!r}; not a valid iofp "
                           f"fingerprint ({MAKE_ONE})")  # fmt: skip
    return fp


def is_fingerprint_file(path: Path) -> bool:
    """Whether `path` starts like a fingerprint document (its first key), for the stages that are
    handed one where they take a trace: a hint, not a check."""
    try:
        with open(path, "rb") as f:
            head = f.read(256)
    except OSError:
        return False
    return head.lstrip().startswith(b"{") and b'"fingerprint_version"' in head


def load(path: Path | str) -> Fingerprint:
    """Read and check the fingerprint JSON at `path` (a file, or an s3:// object)."""
    from iofp import objstore

    doc = artifact_json.load(path, "fingerprint", MAKE_ONE)
    return from_dict(doc, str(objstore.url_of(path) or path))


def dumps(obj: Any) -> str:
    """The document as JSON, one key per line and every list of numbers on one line (a histogram
    is a line, not 19): readable, and a fingerprint stays a few tens of kilobytes."""
    return _dumps(to_dict(obj), 0) + "\n"


def _dumps(v: Any, depth: int) -> str:
    pad, inner = " " * depth, " " * (depth + 1)
    if isinstance(v, dict) and v:
        items = [f"{inner}{json.dumps(k)}: {_dumps(x, depth + 1)}" for k, x in v.items()]
        return "{\n" + ",\n".join(items) + "\n" + pad + "}"
    if isinstance(v, list) and any(isinstance(x, (dict, list)) for x in v):
        return "[\n" + ",\n".join(inner + _dumps(x, depth + 1) for x in v) + "\n" + pad + "]"
    return json.dumps(v)


def field_paths(cls: type = Fingerprint) -> dict[str, list[str]]:
    """Every dataclass of the document reachable from `cls` -> its JSON keys (what the schema doc lists)."""
    out: dict[str, list[str]] = {}

    def walk(c: type) -> None:
        if c.__name__ in out:
            return
        hints = typing.get_type_hints(c)
        out[c.__name__] = [json_key(f.name) for f in dataclasses.fields(c)]
        for f in dataclasses.fields(c):
            for t in _inner_types(hints[f.name]):
                walk(t)

    walk(cls)
    return out


def _inner_types(tp: Any) -> list[type]:
    if dataclasses.is_dataclass(tp):
        return [tp]
    return [t for arg in typing.get_args(tp) for t in _inner_types(arg)]


def _convert(tp: Any, value: Any, where: str, path: str, nullable: bool = False) -> Any:
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (types.UnionType, typing.Union):
        if value is None and type(None) in args:
            return None
        inner = [a for a in args if a is not type(None)]
        if len(inner) > 1:  # float | bool | None: a JSON scalar of one of them
            if not any(_fits(a, value) for a in inner):
                raise _bad(where, path, value, "a number, true/false or null")
            return value
        return _convert(inner[0], value, where, path, nullable=type(None) in args)
    want = _want(tp) + (" or null" if nullable else "")
    if value is None:
        if tp is Any:
            return None
        raise _bad(where, path, value, want)
    if dataclasses.is_dataclass(tp):
        if not isinstance(value, dict):
            raise _bad(where, path, value, want)
        hints = typing.get_type_hints(tp)
        kwargs = {}
        for f in dataclasses.fields(tp):
            key = json_key(f.name)
            sub = f"{path}.{key}" if path else key
            if key not in value:
                if f.default is not dataclasses.MISSING:
                    kwargs[f.name] = f.default
                    continue
                raise BadInput(f"{where}: no `{sub}`; not a complete iofp fingerprint ({MAKE_ONE})")
            kwargs[f.name] = _convert(hints[f.name], value[key], where, sub)
        return tp(**kwargs)
    if origin is list:
        if not isinstance(value, list):
            raise _bad(where, path, value, want)
        return [_convert(args[0], v, where, f"{path}[{i}]") for i, v in enumerate(value)]
    if origin is dict:
        if not isinstance(value, dict):
            raise _bad(where, path, value, want)
        return {k: _convert(args[1], v, where, f"{path}.{k}") for k, v in value.items()}
    if not _fits(tp, value):
        raise _bad(where, path, value, want)
    return value  # an int where a float is expected stays as written: it compares and prints the same


def _fits(tp: Any, value: Any) -> bool:
    """Whether a JSON scalar is of type `tp` (an int is a float too: JSON may write 2.0 as 2; a
    true/false is never a number)."""
    if tp is Any:
        return True
    if tp is bool:
        return isinstance(value, bool)
    if isinstance(value, bool):
        return False
    if tp is int:
        return isinstance(value, int)
    if tp is float:
        return isinstance(value, (int, float))
    return tp is str and isinstance(value, str)


def _want(tp: Any) -> str:
    if dataclasses.is_dataclass(tp) or typing.get_origin(tp) is dict:
        return "an object"
    if typing.get_origin(tp) is list:
        return "a list"
    return {bool: "true or false", int: "an integer", float: "a number", str: "a string"}.get(tp, "a value")


def _bad(where: str, path: str, value: Any, want: str) -> BadInput:
    return BadInput(f"{where}: `{path}` is {_kind(value)}; expected {want}")


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true/false"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return "a list" if isinstance(value, list) else "an object"
