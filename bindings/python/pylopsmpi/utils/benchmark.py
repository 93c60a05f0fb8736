"""pylops_mpi.utils.benchmark: the `benchmark` decorator and `mark` (PyLops-MPI's timing tool).

@benchmark (or @benchmark(description=..., logger=...)) times a function between barriers on
MPI.COMM_WORLD; mark(label) inside it records intermediate times (a barrier each); nested
benchmarked functions are indented. When the outermost one returns, rank 0 prints the tree (or
gives it to logger.info). BENCH_PYLOPS_MPI=0 turns it all into no-ops, as in PyLops-MPI."""
import functools
import os
import time

from mpi4py import MPI

__all__ = ["benchmark", "mark"]

ENABLE_BENCHMARK = int(os.getenv("BENCH_PYLOPS_MPI", 1)) == 1

_mark_stack = []   # the active benchmarked calls' mark functions, innermost last
_markers = []      # (label, time, level); a decorator's own entry holds its total time


def _sync():
    MPI.COMM_WORLD.Barrier()


def _report(markers):
    """The printed lines: each decorated call's total, then the time between its marks."""
    out, stack = [], []
    for i, (label, t, level) in enumerate(markers):
        if label.startswith("[decorator]"):
            out.append("\t" * (level - 1) + f"{label}: total runtime: {t:6f} s\n")
            continue
        if stack and stack[-1][2] == level:
            prev_label, prev_t, _ = stack.pop()
            out.append("\t" * level + f"{prev_label}-->{label}: {t - prev_t:6f} s\n")
        if i + 1 < len(markers) and markers[i + 1][2] >= level:
            stack.append((label, t, level))
    return out


def mark(label):
    """Ends the previous mark and starts a new one (inside a benchmarked function)."""
    if not ENABLE_BENCHMARK:
        return
    if not _mark_stack:
        raise RuntimeError("mark() called outside of a benchmarked region")
    _mark_stack[-1](label)


def benchmark(func=None, description="", logger=None):
    """Times func (collective on MPI.COMM_WORLD: barriers around the call and at each mark)."""
    def plain(f):
        @functools.wraps(f)
        def wrapped(*args, **kwargs):
            return f(*args, **kwargs)
        return wrapped

    def decorate(f):
        @functools.wraps(f)
        def wrapper(*args, **kwargs):
            global _markers
            level = len(_mark_stack) + 1
            name = f"[decorator]{description or f.__name__}"
            _markers.append((name, None, level))
            slot = len(_markers) - 1

            def local_mark(label):
                _sync()
                _markers.append((label, time.perf_counter(), level))
            _mark_stack.append(local_mark)
            try:
                _sync()
                start = time.perf_counter()
                result = f(*args, **kwargs)
                _sync()
                _markers[slot] = (name, time.perf_counter() - start, level)
            finally:
                _mark_stack.pop()
            if not _mark_stack:
                lines, _markers = _report(_markers), []
                if MPI.COMM_WORLD.Get_rank() == 0:
                    if logger is not None:
                        logger.info("".join(lines))
                    else:
                        print("".join(lines))
            return result
        return wrapper

    wrap = decorate if ENABLE_BENCHMARK else plain
    return wrap if func is None else wrap(func)
