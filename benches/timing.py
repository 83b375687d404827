"""What the peer benchmarks share: timing a case over runs (or several in turn),
printing its row, the ratio of two cases run by run, and reading a file once so that
the page cache is warm."""
import statistics
import time


def timed(f, runs, before=None):
    """The times of ``runs`` calls of ``f`` (``before`` called before each, untimed),
    sorted."""
    return sorted(in_turn({"": f}, runs, before)[""])


def in_turn(cases, runs, before=None):
    """The times of ``runs`` rounds of the callables ``cases`` (a dict by name), each
    round calling every case once, in order (``before`` called before each call,
    untimed): each name's times in run order, so that a slow spell of the machine
    falls on every case alike."""
    out = {name: [] for name in cases}
    for _ in range(runs):
        for name, f in cases.items():
            if before:
                before()
            t = time.perf_counter()
            f()
            out[name].append(time.perf_counter() - t)
    return out


def paired(num, den):
    """The median, min and max of ``num[i] / den[i]``: two cases' times from the same
    rounds ([`in_turn`]) compared round by round."""
    r = sorted(a / b for a, b in zip(num, den))
    return statistics.median(r), r[0], r[-1]


def row(name, ts):
    """Prints ``name<TAB>median<TAB>min<TAB>max`` of the sorted times ``ts``, in
    seconds; returns the median."""
    print(f"{name}\t{ts[len(ts) // 2]:.4f}\t{ts[0]:.4f}\t{ts[-1]:.4f}", flush=True)
    return ts[len(ts) // 2]


def recycle(nbytes):
    """Touches and frees ``nbytes`` of memory (when that much is free), so that the
    next command's new pages are ones the kernel just had back, not ones a virtual
    machine's host took back (virtio-balloon free page reporting), which the host
    faults in again on first touch: on the 2-core VM, `cp` of 4 GiB into such pages
    took 5.4 s of system time against 1.6 s into recycled ones. Done before every
    timed command alike; on a machine that reports no free pages it changes
    nothing."""
    import numpy as np

    free = 0
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemFree:"):
                free = int(line.split()[1]) * 1024
    if free < nbytes + (1 << 30):
        return
    a = np.ones(nbytes, np.uint8)
    del a


def warm(path):
    """Reads ``path`` once, into the page cache."""
    with open(path, "rb") as f:
        while f.read(64 << 20):
            pass
