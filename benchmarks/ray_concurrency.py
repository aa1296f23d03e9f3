"""Does Ray Data run two map tasks at once on this machine? A control without vthread.

Run from the repository root::

    python -m benchmarks.ray_concurrency

Eight blocks, each mapped by a function that burns ``BURN_S`` of CPU and returns its batch,
through ``Dataset.map_batches`` at 1 and 2 tasks at a time (the way ``scan_dataset`` runs),
and the same eight burns as plain Ray tasks. If the plain tasks take about half the time of
one-at-a-time and the Data map at 2 does not, then Ray Data schedules one map task at a time
here, and a ``scan_dataset`` run with two workers cannot show scaling on this machine,
whatever vthread does. Prints the seconds of each (best of ``ROUNDS``) and the load.
"""

from __future__ import annotations

import os
import time
from typing import Any, Final

BLOCKS: Final = 8
BURN_S: Final = 0.15
ROUNDS: Final = 3


def _burn(batch: Any) -> Any:
    started = time.process_time()
    while time.process_time() - started < BURN_S:
        pass
    return batch


def main() -> None:
    import pyarrow as pa
    import ray

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    context = ray.data.DataContext.get_current()
    context.enable_progress_bars = False
    table = pa.table({"run": [f"t{i}" for i in range(BLOCKS * 1000)]})
    ds = ray.data.from_arrow([table.slice(i * 1000, 1000) for i in range(BLOCKS)]).materialize()

    def data_map(tasks: int) -> float:
        started = time.perf_counter()
        mapped = ds.map_batches(_burn, batch_format="pyarrow", batch_size=None,
                                compute=ray.data.TaskPoolStrategy(size=tasks))
        rows = sum(b.num_rows for b in mapped.iter_batches(batch_format="pyarrow",
                                                            batch_size=None))
        assert rows == BLOCKS * 1000
        return time.perf_counter() - started

    burn = ray.remote(_burn)

    def plain_tasks() -> float:
        started = time.perf_counter()
        ray.get([burn.remote(None) for _ in range(BLOCKS)])
        return time.perf_counter() - started

    data_map(1)  # workers started, untimed
    plain_tasks()
    best = {name: min(run() for _ in range(ROUNDS)) for name, run in (
        ("ray.data map, 1 task at a time", lambda: data_map(1)),
        ("ray.data map, 2 tasks at a time", lambda: data_map(2)),
        ("plain ray tasks", plain_tasks))}
    ray.shutdown()
    print(f"{BLOCKS} burns of {BURN_S} s CPU each; serial would take {BLOCKS * BURN_S:.2f} s")
    for name, seconds in best.items():
        print(f"{name:<34} {seconds:.3f} s")
    print(f"load average {os.getloadavg()}, ray {ray.__version__}")


if __name__ == "__main__":
    main()
