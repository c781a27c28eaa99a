"""How trace_rank_0 / trace_rank_1 were made (kept for provenance; not run by the tests).

torch 2.13.0 CPU wheel in a scratch venv (never a dependency of rulekit), gloo backend
with its flight recorder (TORCH_FR_BUFFER_SIZE): two ranks run three all_reduces, a
broadcast and an all_reduce on a second group; then rank 0 enqueues one more
all_reduce that rank 1 never joins, and both dump with `_dump_fr_trace()` (the same
pickle layout as the NCCL dumps: version, pg_config, pg_status, entries with tuple
process_group, frames, ...).  Paths inside the frames are those of that scratch run.
"""
import os, sys, pickle, json, time
os.environ["TORCH_FR_BUFFER_SIZE"] = "100"
os.environ["TORCH_NCCL_TRACE_BUFFER_SIZE"] = "100"
import torch, torch.distributed as dist
import torch.multiprocessing as mp

def run(rank, world):
    os.environ["MASTER_ADDR"] = "127.0.0.1"; os.environ["MASTER_PORT"] = "29533"
    dist.init_process_group("gloo", rank=rank, world_size=world)
    t = torch.ones(4, 3)
    for i in range(3):
        dist.all_reduce(t)
    dist.broadcast(t, 0)
    sub = dist.new_group([0, 1], group_desc="tp")
    dist.all_reduce(t, group=sub)
    if rank == 0:
        w = dist.all_reduce(t, async_op=True)   # rank 1 never joins
        time.sleep(2)
    else:
        time.sleep(2)
    import torch._C._distributed_c10d as c
    data = c._dump_fr_trace()
    open(f"trace_rank_{rank}", "wb").write(data)
    os._exit(0)

if __name__ == "__main__":
    mp.spawn(run, args=(2,), nprocs=2, join=False)
    time.sleep(15)
