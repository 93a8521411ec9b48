"""`iofp fleet`: fingerprint every trace of a lake on Spark, each trace one task running iofp's own
fingerprint code (fingerprint.api.fingerprint_trace: one implementation of every figure).

The driver lists the lake (a trace is a prefix holding trace.json: only complete traces) and makes
one task per trace. A task copies its trace to local scratch, fingerprints it and writes the document
beside the trace as fingerprint.json, the trace's manifest ETag and iofp's version in the object's
metadata: a later run finds it current and reads it instead (resumable). A trace that cannot be
read (damaged, foreign) is a row naming it and why; the others go on. A task that fails otherwise
(the store away, a worker lost) raises, and Spark runs it again (up to MAX_ATTEMPTS).
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from iofp import __version__, objstore
from iofp.contract import FINGERPRINT, HIVE_KEYS, MANIFEST, fetch_trace
from iofp.errors import BadInput, MissingCapability

MAX_ATTEMPTS = 3  # tries per task: Spark's spark.task.maxFailures, and local[N,F]'s F
META_TRACE = "iofp-trace-etag"  # fingerprint.json's metadata: the manifest it was made from
META_VERSION = "iofp-version"


@dataclass(frozen=True)
class TraceTask:
    bucket: str
    key: str  # the trace's prefix (no trailing slash)
    manifest_etag: str
    force: bool = False

    @property
    def url(self) -> objstore.Url:
        return objstore.Url(self.bucket, self.key)


def find_traces(lake: objstore.Url, *, force: bool = False) -> list[TraceTask]:
    """Every complete trace under `lake` (a prefix with a trace.json), in key order."""
    objstore.check_bucket(lake)
    tasks = [
        TraceTask(lake.bucket, key.removesuffix("/" + MANIFEST), etag, force)
        for key, etag in objstore.listing(lake, etags=True)
        if key.endswith("/" + MANIFEST)
    ]
    if not tasks:
        raise BadInput(f"{lake}: no traces (no */{MANIFEST}); ship some with iofp capture -o {lake}")
    return tasks


def partitions(key: str) -> dict[str, str]:
    """host, service and date from a trace's hive path (what the lake files it under)."""
    parts = dict(p.split("=", 1) for p in key.split("/") if "=" in p)
    return {k: parts.get(k, "") for k in HIVE_KEYS}


def fingerprint_task(task: TraceTask) -> dict[str, Any]:
    """One trace's row: its partitions, the status (made, current, unreadable) and the document
    (as a dict) or the error. Runs on a Spark worker."""
    from fingerprint.api import fingerprint_trace
    from iofp import fingerprint_doc

    row: dict[str, Any] = {"trace": str(task.url), **partitions(task.key), "seconds": 0.0,
                           "attempt": _attempt()}  # fmt: skip
    t0 = time.perf_counter()
    fp_url = task.url.join(FINGERPRINT)
    try:
        there = None if task.force else objstore.head(fp_url)
        meta = (there or {}).get("metadata", {})
        if there and meta.get(META_TRACE) == task.manifest_etag and meta.get(META_VERSION) == __version__:
            row.update(status="current", doc=fingerprint_doc.load(str(fp_url)).to_dict())
        else:
            with tempfile.TemporaryDirectory(prefix="iofp-fleet-") as scratch:
                doc = fingerprint_trace(fetch_trace(task.url, Path(scratch) / "trace"))
            text = fingerprint_doc.dumps(doc).encode()
            made_from = {META_TRACE: task.manifest_etag, META_VERSION: __version__}
            objstore.put_bytes(fp_url, text, metadata=made_from)
            row.update(status="made", doc=doc.to_dict())
    except objstore.Unreachable:
        raise  # the store, not the trace: Spark tries the task again
    except BadInput as e:
        row.update(status="unreadable", error=str(e))
    row["seconds"] = time.perf_counter() - t0
    return row


def _spark_running() -> bool:
    try:
        from pyspark import SparkContext
    except ImportError:
        return False
    return SparkContext._active_spark_context is not None


def _attempt() -> int:
    """Which try of its task this is (0: the first), on a Spark worker; 0 elsewhere."""
    try:
        from pyspark import TaskContext
    except ImportError:
        return 0
    ctx = TaskContext.get()
    return ctx.attemptNumber() if ctx is not None else 0


def spark_session(master: str) -> Any:
    """A Spark session that downloads nothing (no packages, an empty Ivy home), shows no UI, and
    runs iofp's Python on the workers. local[N] gets MAX_ATTEMPTS tries per task (local mode
    otherwise tries once)."""
    try:
        from pyspark.sql import SparkSession
    except ImportError:
        raise MissingCapability("iofp fleet runs on Spark: pip install 'iofp[fleet]' (pyspark), "
                                "and a Java 17+ runtime (apt-get install openjdk-17-jre-headless)") from None
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    if master.startswith("local[") and "," not in master:
        master = f"{master[:-1]},{MAX_ATTEMPTS}]"
    ivy = Path(tempfile.gettempdir()) / "iofp-spark-ivy"
    builder = (
        SparkSession.builder.master(master)
        .appName("iofp fleet")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")  # a bar redrawn on stderr, over iofp's lines
        .config("spark.jars.ivy", str(ivy))
        .config("spark.task.maxFailures", str(MAX_ATTEMPTS))
        .config("spark.python.worker.reuse", "true")
        .config("spark.sql.session.timeZone", "UTC")
    )
    for k in ("AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3", "AWS_REGION", "AWS_DEFAULT_REGION"):
        if k in os.environ:  # the executors' store is the driver's (credentials: their own chain)
            builder = builder.config(f"spark.executorEnv.{k}", os.environ[k])
    try:
        spark = builder.getOrCreate()
    except Exception as e:  # no Java, most often: one line, not the JVM's traceback
        raise BadInput(f"cannot start Spark ({master}): {str(e).splitlines()[0]}; iofp fleet needs a Java "
                       "17+ runtime (apt-get install openjdk-17-jre-headless)") from None  # fmt: skip
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def run(
    lake: objstore.Url, *, master: str = "local[2]", force: bool = False, spark: Any = None
) -> list[dict[str, Any]]:
    """Fingerprint every trace of `lake` on Spark; a row per trace (fingerprint_task)."""
    tasks = find_traces(lake, force=force)
    # stop only a session this call started (a caller's, or one already running here, is theirs)
    own = spark is None and not _spark_running()
    spark = spark or spark_session(master)
    try:
        rdd = spark.sparkContext.parallelize(tasks, numSlices=len(tasks))
        return sorted(rdd.map(fingerprint_task).collect(), key=lambda r: r["trace"])
    finally:
        if own:
            spark.stop()
