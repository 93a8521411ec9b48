"""Text for the terminal: one replay's summary (the comparison table lives in compare.py)."""

from __future__ import annotations

from typing import Any


def replay_summary(record: dict[str, Any]) -> str:
    conv, fio, fid = record["conversion"], record["fio"], record["fidelity"]
    summ = fio.get("summary") or {}
    done = {d: (summ.get(d) or {}).get("total_ios", 0) for d in ("read", "write", "trim")}
    done["sync"] = (summ.get("sync") or {}).get("total_ios", 0)
    ios = ", ".join(f"{v} {k}" for k, v in done.items() if v) or "no I/O"
    lines = [
        f"selection: {record['selection']['how']}; "
        f"{conv['kept']} I/Os demanded over {conv['duration_us'] / 1e6:.3f} s",
        # wall time, not fio's job_runtime: with one job per stream, group reporting sums the jobs'
        f"fio ({fio['version']}, exit {fio['exit_code']}): {ios} "
        f"in {record['timing']['wall_s']:.1f} s of wall time",
    ]
    if fid.get("status") == "measured":
        lines.append(f"fidelity: {fidelity_line(fid)}")
    else:
        lines.append(f"fidelity: {fid.get('status')}: {fid.get('reason', '')}")
    return "\n".join(lines)


def fidelity_line(fid: dict[str, Any]) -> str:
    def f(x: Any, spec: str, scale: float = 1.0) -> str:
        return "n/a" if x is None else format(x * scale, spec)

    head = f"{fid['verdict']}, timing {fid['timing']}"
    if fid.get("reasons"):
        head += f" ({'; '.join(fid['reasons'])})"
    return (
        f"{head}: {fid['matched']}/{fid['expected']} I/Os matched "
        f"({fid['missing']} missing, {fid['extra']} extra); "
        f"IOPS MAPE {f(fid['iops_mape'], '.2f', 100)}%; lateness p50 {f(fid['late_p50_us'], '.0f')} µs, "
        f"p99 {f(fid['late_p99_us'], '.0f')} µs (|lateness| p50 {f(fid.get('abs_late_p50_us'), '.0f')} µs, "
        f"p99 {f(fid.get('abs_late_p99_us'), '.0f')} µs); stretch {f(fid['stretch'], '+.2f', 100)}%"
    )
