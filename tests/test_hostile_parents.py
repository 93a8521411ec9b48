"""A results or scratch directory another user can replace: iofp runs as root, and a private directory
is no help when the owner of a directory above it (or anyone, where that one is writable by all
without the sticky bit) can rename it away between iofp's check and its writes and put a directory
of theirs, full of links, in its place. Real directories of a real unprivileged user (`nobody`)
under /tmp; what must keep working (/tmp itself, a sudo user's own directories) works."""

from __future__ import annotations

import os
import shutil
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import REPO, needs_root
from helpers import IOFP, run_iofp

pytestmark = [needs_root]

NOBODY = 65534
TRACE = REPO / "samples" / "traces" / "commit-heavy"


@pytest.fixture
def base() -> Iterator[Path]:
    """A root-owned directory of the test's own directly under /tmp (sticky, shared by every user)."""
    d = Path("/tmp") / f"iofp-parents-{uuid.uuid4().hex[:8]}"
    d.mkdir(mode=0o755)
    yield d
    shutil.rmtree(d, ignore_errors=True)


def iolog(at: Path) -> Path:
    f = at / "x.iolog"
    f.write_text("fio version 2 iolog\n/dev/x add\n/dev/x open\n/dev/x read 0 4096\n/dev/x close\n")
    return f


def writers(out: Path, at: Path) -> list[list[object]]:
    """Commands that write a results or trace directory, each refused before its first piece of work."""
    return [
        ["replay", TRACE, "--target", at / "new.img", "-o", out],
        ["probe", at / "new.img", "--size", "16M", "--cells", "seq", "-o", out],
        ["import", "fio-iolog", iolog(at), "-o", out],
    ]


def nobodys(path: Path, mode: int = 0o755) -> Path:
    path.mkdir()
    os.chmod(path, mode)
    os.chown(path, NOBODY, -1)
    return path


def assert_refused_in(args: list[object], out: Path, parent: Path, why: str, at: Path) -> None:
    before = sorted(at.rglob("*"))
    code, stdout, err = run_iofp(*map(str, args))
    assert (code, stdout) == (2, ""), err
    assert err.startswith(f"iofp: {out}: another user can replace it in {parent} ({why})"), err
    assert err.count("\n") == 1 and "only root or you can change" in err, err
    assert sorted(at.rglob("*")) == before  # no output made, no target


def test_an_output_in_a_directory_of_another_user_is_refused(base):
    theirs = nobodys(base / "theirs")
    for args in writers(theirs / "out", base):
        assert_refused_in(args, theirs / "out", theirs, f"owned by uid {NOBODY}", base)


def test_an_output_deep_under_a_directory_of_another_user_is_refused(base):
    """Not only the parent: nobody can rename `mine` (root's, 0755) away from their directory too."""
    theirs = nobodys(base / "theirs")
    mine = theirs / "mine"
    mine.mkdir()
    args = writers(mine / "out", base)[2]
    assert_refused_in(args, mine / "out", theirs, f"owned by uid {NOBODY}", base)


def test_an_output_in_a_directory_every_user_can_write_is_refused(base):
    shared = base / "shared"
    shared.mkdir()
    os.chmod(shared, 0o777)  # no sticky bit
    (shared / "out").mkdir()  # root's own and empty: it can still be renamed away
    for args in writers(shared / "out", base):
        assert_refused_in(args, shared / "out", shared, "mode 777: every user can write in it", base)


def test_a_link_of_another_user_in_a_sticky_directory_is_refused(base):
    """/tmp-like: the sticky bit lets the link's owner (not root) remove it and plant another."""
    sticky = base / "sticky"
    sticky.mkdir()
    os.chmod(sticky, 0o1777)
    real = base / "real"
    real.mkdir()
    link = sticky / "link"
    link.symlink_to(real)
    os.lchown(link, NOBODY, -1)
    out = link / "out"
    why = f"shared (mode 1777), and what the path takes in it is owned by uid {NOBODY}"
    assert_refused_in(writers(out, base)[2], out, sticky, why, base)


def test_a_sticky_directory_and_a_sudo_users_own_directory_are_written(base, monkeypatch):
    """/tmp's own mode, and `sudo iofp ... -o ~/x`: the home directory of the user who ran sudo."""
    sticky = base / "sticky"
    sticky.mkdir()
    os.chmod(sticky, 0o1777)
    code, _, err = run_iofp("import", "fio-iolog", str(iolog(base)), "-o", str(sticky / "t"))
    assert code == 0, err
    home = nobodys(base / "home")
    monkeypatch.setenv("SUDO_UID", str(NOBODY))
    code, _, err = run_iofp("import", "fio-iolog", str(iolog(base)), "-o", str(home / "t"))
    assert code == 0, err
    assert (home / "t" / "trace.json").is_file()


def test_a_scratch_directory_another_user_can_replace_is_refused(base, tmp_path):
    """DuckDB's spill and iofp's links go in a private directory under TMPDIR; under a directory of
    another user that private directory can be swapped for theirs."""
    theirs = nobodys(base / "theirs", 0o777)
    env = {**os.environ, "TMPDIR": str(theirs)}
    env.pop("SUDO_UID", None)
    cmd = [*IOFP, "fingerprint", str(TRACE), "--json", str(tmp_path / "fp.json")]
    res = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert res.returncode == 2, res.stderr
    assert res.stderr.startswith(f"iofp: {theirs}: another user can replace iofp's scratch directory in "
                                 f"{theirs} (owned by uid {NOBODY}); set TMPDIR"), res.stderr  # fmt: skip
    assert res.stderr.count("\n") == 1 and "Traceback" not in res.stderr, res.stderr
    assert list(theirs.iterdir()) == [] and not (tmp_path / "fp.json").exists()
