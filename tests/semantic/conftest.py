"""One torch thread per test process: under pytest-xdist two workers × two OpenMP threads on two
cores spin against each other (measured on the 2-core machine: encoding 600 texts took 90 s with
two threads per process and 5 s with one). Set before torch is imported, i.e. at collection."""

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")
