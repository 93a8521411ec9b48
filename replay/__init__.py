"""Replay: trace -> fio iolog v3, fio runner, results, fidelity and device comparison."""
