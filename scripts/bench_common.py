"""Shared by the scripts/bench_*.py benchmarks: what the machine is."""

import os
import platform


def cpu_model():
    """The CPU's model name (/proc/cpuinfo), else what platform says."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def write_doc(path, text):
    """Writes a benchmark's document atomically (temp file, then rename) and prints it."""
    with open(path + ".tmp", "w") as f:
        f.write(text)
    os.replace(path + ".tmp", path)
    print(text)
