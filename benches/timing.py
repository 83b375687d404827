"""What the peer benchmarks share: timing a case over runs, printing its row, and
reading a file once so that the page cache is warm."""
import time


def timed(f, runs, before=None):
    """The times of ``runs`` calls of ``f`` (``before`` called before each, untimed),
    sorted."""
    out = []
    for _ in range(runs):
        if before:
            before()
        t = time.perf_counter()
        f()
        out.append(time.perf_counter() - t)
    return sorted(out)


def row(name, ts):
    """Prints ``name<TAB>median<TAB>min<TAB>max`` of the sorted times ``ts``, in
    seconds; returns the median."""
    print(f"{name}\t{ts[len(ts) // 2]:.4f}\t{ts[0]:.4f}\t{ts[-1]:.4f}", flush=True)
    return ts[len(ts) // 2]


def warm(path):
    """Reads ``path`` once, into the page cache."""
    with open(path, "rb") as f:
        while f.read(64 << 20):
            pass
