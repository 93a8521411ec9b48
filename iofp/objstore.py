"""Where an artifact lives when it is not a local path: `s3://bucket/key` in an S3-compatible store.

Credentials, region and endpoint come from the standard AWS chain (environment, ~/.aws, an instance
role); `AWS_ENDPOINT_URL` points at an S3-compatible store (MinIO, Ceph, SeaweedFS). Every artifact
an iofp command reads or writes may be such a URL: the trace contract (iofp/contract.py), the
fingerprint document (iofp/fingerprint_doc.py) and every --json output (iofp/output.py) come here,
and nothing else talks to the store directly.

An object is written by one PUT, which the store makes visible only when it is complete, with its
SHA-256 for the store to check against what it received. A failure that is the user's (no bucket,
no credentials, an endpoint that does not answer) is one line naming the fix, exit 2;
`Unreachable` (a BadInput too) is what a shipper waits out. This module imports no stage.
"""

from __future__ import annotations

import base64
import contextlib
import functools
import hashlib
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from iofp.errors import BadInput

SCHEME = "s3://"


class Unreachable(BadInput):
    """The store did not answer (down, or a wrong endpoint): retryable by a shipper, bad input to a
    command that needs it now."""


@dataclass(frozen=True)
class Url:
    bucket: str
    key: str  # no leading slash; "" for the bucket's root

    def __str__(self) -> str:
        return f"{SCHEME}{self.bucket}/{self.key}"

    def join(self, *parts: str) -> Url:
        key = "/".join(p.strip("/") for p in (self.key, *parts) if p.strip("/"))
        return Url(self.bucket, key)

    @property
    def name(self) -> str:
        return self.key.rstrip("/").rsplit("/", 1)[-1]

    @property
    def parent(self) -> Url:
        return Url(self.bucket, self.key.rstrip("/").rpartition("/")[0])


def url_of(where: Any) -> Url | None:
    """The store URL `where` names (a str, or a Path into which typer folded `s3://` as `s3:/`), or
    None for a local path."""
    text = os.fspath(where) if isinstance(where, (str, os.PathLike)) else None
    if text is None or not text.startswith("s3:/"):
        return None
    rest = text[5:] if text.startswith(SCHEME) else text[4:]
    bucket, _, key = rest.partition("/")
    if not bucket:
        raise BadInput(f"{text}: name a bucket, e.g. s3://traces/host=db1/")
    return Url(bucket, key.strip("/"))


def is_url(where: Any) -> bool:
    return url_of(where) is not None


def endpoint() -> str:
    return os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL") or "AWS S3"


@functools.cache
def client() -> Any:
    """One S3 client per process (they are thread-safe), from the standard chain. Botocore's own
    retries are short (a few attempts, seconds): a long outage is the shipper's to wait out."""
    import boto3
    from botocore.config import Config

    region = os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION") or "us-east-1"
    cfg = Config(
        region_name=region,
        retries={"mode": "standard", "max_attempts": 3},  # retries: 4 tries in all
        connect_timeout=5,
        read_timeout=60,
        request_checksum_calculation="when_required",  # ours is SHA-256, sent whole (put below)
        response_checksum_validation="when_required",
    )
    return boto3.session.Session().client("s3", config=cfg)


def reset_client() -> None:
    """Forget the client (tests change the endpoint or credentials between servers)."""
    client.cache_clear()


def sha256_b64(data: bytes) -> str:
    return base64.b64encode(hashlib.sha256(data).digest()).decode()


def file_sha256_b64(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
    return base64.b64encode(h.digest()).decode()


@contextlib.contextmanager
def _named(url: Url, doing: str) -> Iterator[None]:
    """Turn the client's failures into one line about `url` naming the fix."""
    from botocore import exceptions as bx

    try:
        yield
    except (bx.NoCredentialsError, bx.PartialCredentialsError):
        raise BadInput(
            f"{url}: no AWS credentials; set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY "
            "(or AWS_PROFILE, or run where an instance role gives them)"
        ) from None
    except (bx.EndpointConnectionError, bx.ConnectTimeoutError, bx.ReadTimeoutError,
            bx.ConnectionClosedError) as e:  # fmt: skip
        raise Unreachable(
            f"{url}: the object store at {endpoint()} does not answer ({type(e).__name__}); "
            "check AWS_ENDPOINT_URL (unset it for AWS S3)"
        ) from None
    except bx.ClientError as e:
        raise _client_error(url, doing, e) from None


def _client_error(url: Url, doing: str, e: Any) -> BadInput:
    err = e.response.get("Error", {})
    code, status = str(err.get("Code", "")), e.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
    if code == "NoSuchBucket":
        return BadInput(f"{url}: no bucket {url.bucket!r} at {endpoint()}; create it, or fix the URL")
    if code in ("NoSuchKey", "404", "NotFound"):
        return BadInput(f"{url}: no such object")
    if code in ("InvalidAccessKeyId", "SignatureDoesNotMatch", "AccessDenied", "403", "ExpiredToken"):
        return BadInput(
            f"{url}: the store refused the credentials ({code}); check AWS_ACCESS_KEY_ID, "
            "AWS_SECRET_ACCESS_KEY and AWS_PROFILE"
        )
    if code == "PreconditionFailed":
        return BadInput(f"{url} already exists; pass --force to overwrite it")
    if isinstance(status, int) and status >= 500:
        return Unreachable(f"{url}: the object store failed to {doing} it ({code or status}); try again")
    return BadInput(f"{url}: cannot {doing} it ({code or status}: {err.get('Message', '')})")


def head(url: Url) -> dict[str, Any] | None:
    """The object's size and SHA-256 (when the store kept one), or None when there is none."""
    from botocore import exceptions as bx

    with _named(url, "read"):
        try:
            r = client().head_object(Bucket=url.bucket, Key=url.key, ChecksumMode="ENABLED")
        except bx.ClientError as e:
            if e.response.get("Error", {}).get("Code") in ("404", "NoSuchKey", "NotFound"):
                return None
            raise
    return {"size": r["ContentLength"], "sha256": r.get("ChecksumSHA256"), "etag": r.get("ETag"),
            "metadata": r.get("Metadata", {})}  # fmt: skip


def check_bucket(url: Url) -> None:
    """Refuse, before any work, a bucket that is not there or a store that does not answer."""
    with _named(url, "reach"):
        client().head_bucket(Bucket=url.bucket)


def get_bytes(url: Url, most: int | None = None) -> bytes:
    """The object's bytes; with `most`, at most most + 1 of them (a Range request), so that an object
    replaced by a larger one after its size was checked is never read whole."""
    extra = {} if most is None else {"Range": f"bytes=0-{most}"}
    with _named(url, "read"):
        return client().get_object(Bucket=url.bucket, Key=url.key, **extra)["Body"].read()


def download(url: Url, path: Path) -> None:
    """Copy an object to a local file, whole or not at all."""
    tmp = path.with_name(f".{path.name}.part")
    with _named(url, "read"):
        client().download_file(url.bucket, url.key, str(tmp))
    os.replace(tmp, path)


def put_bytes(
    url: Url, data: bytes, *, overwrite: bool = True, metadata: dict[str, str] | None = None
) -> str:
    """Write an object whole, the store checking its SHA-256 (returned, base64); without
    `overwrite`, an object already there is refused (a conditional PUT: two writers cannot both win).
    `metadata`: the object's own user metadata (x-amz-meta-*), read back by head()."""
    digest = sha256_b64(data)
    extra: dict[str, Any] = {} if overwrite else {"IfNoneMatch": "*"}
    if metadata:
        extra["Metadata"] = metadata
    with _named(url, "write"):
        client().put_object(
            Bucket=url.bucket, Key=url.key, Body=data,
            ChecksumAlgorithm="SHA256", ChecksumSHA256=digest, **extra,
        )  # fmt: skip
    return digest


def put_file(url: Url, path: Path) -> str:
    """Write a local file as an object (one PUT: the store shows it only when complete)."""
    digest = file_sha256_b64(path)
    with _named(url, "write"), open(path, "rb") as f:
        client().put_object(
            Bucket=url.bucket, Key=url.key, Body=f, ChecksumAlgorithm="SHA256", ChecksumSHA256=digest
        )
    return digest


def listing(url: Url, *, etags: bool = False, most: int | None = None) -> list[tuple[str, Any]]:
    """Every object under `url` (a prefix), as (key, size) (with `etags`: (key, ETag)), in key order;
    with `most`, the listing stops once it holds more than that (a reader that bounds what it reads)."""
    prefix = url.key.rstrip("/") + "/" if url.key else ""
    out: list[tuple[str, Any]] = []
    with _named(url, "list"):
        for page in client().get_paginator("list_objects_v2").paginate(Bucket=url.bucket, Prefix=prefix):
            out.extend((o["Key"], o["ETag"] if etags else o["Size"]) for o in page.get("Contents", []))
            if most is not None and len(out) > most:
                break
    return out


def delete(url: Url) -> None:
    with _named(url, "delete"):
        client().delete_object(Bucket=url.bucket, Key=url.key)
