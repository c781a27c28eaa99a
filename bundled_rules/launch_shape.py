"""The launch's own numbers, compared: a store-based barrier that counts more workers
than the world (`world_size=4, worker_count=8`) means the ranks were launched more than
once (a launcher and `mp.spawn`, `srun -n N` around a script that spawns N itself, two
jobs sharing one rendezvous endpoint): the job's launch configuration, not a node or the
rendezvous service.  Reads only the numbers the line prints; a count at or below the
world says nothing here (ranks still joining are the rendezvous rules' business).
"""
from rulekit.plugin import Accumulator, EventSpec, accumulator_def, register_symptom

AUTHOR = "rulekit corpus"

register_symptom(
    "LAUNCH_WORKERS_EXCEED_WORLD", outcome="application", sub_domain="launcher", rank=745, blame="workload",
    docs="More workers joined the process group's store barrier than the world holds (`world_size=4, "
         "worker_count=8`): the ranks were launched more than once (launcher plus spawn, an srun task count "
         "around a self-spawning script, two jobs on one rendezvous endpoint); the launch configuration.")

# both shapes torch prints: the wait (`Waiting in store based barrier ... (world_size=4,
# worker_count=8, timeout=0:30:00)`) and the timeout (`Timed out initializing process group in
# store based barrier on rank: 0, for key: ... (world_size=2, worker_count=4, timeout=...)`)
TRIGGER = r"store based barrier[^\n]{0,200}?\(world_size=(?P<world_size>\d{1,9}), worker_count=(?P<worker_count>\d{1,9})"


@accumulator_def(
    name="StoreBarrierWorkersExceedWorld", author=AUTHOR, trigger_re=TRIGGER, sources=("applog",), max_lines=0,
    symptoms=("LAUNCH_WORKERS_EXCEED_WORLD",),
    tests=[
        {"line": "Waiting in store based barrier to initialize process group for rank: 0, key: store_based_barrier_key:1 "
                 "(world_size=4, worker_count=8, timeout=0:30:00)\n",
         "symptom": "LAUNCH_WORKERS_EXCEED_WORLD", "captures": {"world_size": "4", "worker_count": "8"}},
        {"line": "RuntimeError: Timed out initializing process group in store based barrier on rank: 1, for key: "
                 "store_based_barrier_key:1 (world_size=2, worker_count=4, timeout=0:30:00)\n",
         "symptom": "LAUNCH_WORKERS_EXCEED_WORLD"},
        {"line": "RuntimeError: Timed out initializing process group in store based barrier on rank: 3, for key: "
                 "store_based_barrier_key:1 (world_size=8, worker_count=4, timeout=0:30:00)\n", "expect": "nothing"},
        {"line": "Waiting in store based barrier to initialize process group for rank: 0, key: store_based_barrier_key:1 "
                 "(world_size=4, worker_count=4, timeout=0:30:00)\n", "expect": "nothing"},
    ],
)
# rulekit: ignore[RK306]  (the barrier timeout is also a rendezvous timeout: both read it, this one only when the counts exceed the world, and it outranks)
class StoreBarrierWorkersExceedWorld(Accumulator):
    """One barrier line whose worker count exceeds its world size."""

    def __init__(self, ctx, line, match):
        super().__init__(ctx, line, match)
        self.world = int(match["world_size"])
        self.workers = int(match["worker_count"])

    def finalize(self):
        if self.workers <= self.world:
            return []
        return [EventSpec(type="bad_node", symptom="LAUNCH_WORKERS_EXCEED_WORLD",
                          fields={"world_size": str(self.world), "worker_count": str(self.workers)})]
