#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Gloo against "collective" under torch.distributed, in one process.

    bench_torch.py NRANKS [REPEATS]      (module loaded; tools/bench-torch.sh)

Launches NRANKS ranks torchrun-style (env://).  Each rank builds the
default process group on "collective" and a Gloo group beside it, then times,
interleaving the two backends and taking medians over REPEATS (default 7):
  - all_reduce (SUM) of a 25 MiB float32 tensor (DDP's default bucket size),
  - one DDP training step (batch of 4: forward, backward with its all_reduces,
    SGD) of an MLP of 6.3 M float32 parameters (25 MiB of gradients),
  - the same step on the bare model without DDP (the compute floor).
Rank 0 prints the table; every figure is rank 0's wall time.
"""
import os
import socket
import statistics
import subprocess
import sys
import time

BATCH = 4   # small: under TCG the matmuls, not the 25 MiB of gradients, dominate


def launch(n, repeats):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    procs = [subprocess.Popen(
        [sys.executable, os.path.abspath(__file__), "worker", str(repeats)],
        env=dict(os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port),
                 RANK=str(r), WORLD_SIZE=str(n), LOCAL_RANK=str(r),
                 LOCAL_WORLD_SIZE=str(n), PYTHONWARNINGS="ignore"))
        for r in range(n)]
    return max(abs(p.wait()) for p in procs)


def worker(repeats):
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                    "..", "userlib", "torch"))
    import torch_collective  # noqa: F401

    dist.init_process_group("collective", init_method="env://")
    gloo = dist.new_group(backend="gloo")
    coll = dist.group.WORLD
    rank, n = dist.get_rank(), dist.get_world_size()
    pgs = {"gloo": gloo, "collective": coll}
    torch.set_num_threads(1)

    def timed(fn, pg):
        dist.barrier(group=gloo)
        t = time.perf_counter()
        fn(pg)
        return time.perf_counter() - t

    # all_reduce of one 25 MiB bucket
    x = torch.full((25 * 2**20 // 4,), float(rank + 1))
    times = {k: [] for k in pgs}
    for i in range(repeats + 2):
        for name, pg in pgs.items():
            dt = timed(lambda g: dist.all_reduce(x, group=g), pg)
            if i >= 2:
                times[name].append(dt)
    ar = {k: statistics.median(v) for k, v in times.items()}

    # DDP steps
    def mlp():
        torch.manual_seed(0)
        layers = []
        for _ in range(6):
            layers += [torch.nn.Linear(1024, 1024), torch.nn.ReLU()]
        return torch.nn.Sequential(*layers)
    models = {k: DDP(mlp(), process_group=pg) for k, pg in pgs.items()}
    models["local"] = mlp()
    opts = {k: torch.optim.SGD(m.parameters(), lr=1e-3) for k, m in models.items()}
    nparams = sum(p.numel() for p in models["local"].parameters())
    g = torch.Generator().manual_seed(rank)
    data = torch.randn(BATCH, 1024, generator=g)

    def step(k):
        opts[k].zero_grad()
        models[k](data).square().mean().backward()
        opts[k].step()
    steps = {k: [] for k in models}
    for i in range(repeats + 2):
        for k in models:
            dt = timed(lambda _: step(k), None)
            if i >= 2:
                steps[k].append(dt)
    st = {k: statistics.median(v) for k, v in steps.items()}

    if rank == 0:
        mib = x.numel() * 4 / 2**20
        print(f"# torch {torch.__version__}, np={n}, median of {repeats}, rank 0 wall time")
        print(f"{'what':44s} {'gloo ms':>9s} {'collective ms':>14s} {'gloo/coll':>10s}")
        print(f"{f'all_reduce SUM {mib:.0f} MiB float32':44s} {ar['gloo'] * 1e3:9.1f} "
              f"{ar['collective'] * 1e3:14.1f} {ar['gloo'] / ar['collective']:10.2f}")
        print(f"{f'DDP step, MLP {nparams / 1e6:.1f} M params, batch {BATCH}':44s} "
              f"{st['gloo'] * 1e3:9.1f} {st['collective'] * 1e3:14.1f} "
              f"{st['gloo'] / st['collective']:10.2f}")
        print(f"{'same step without DDP (compute only)':44s} {st['local'] * 1e3:9.1f}")
        print(f"# all_reduce busbw (2(n-1)/n * size / time): gloo "
              f"{2 * (n - 1) / n * mib / ar['gloo']:.0f} MiB/s, collective "
              f"{2 * (n - 1) / n * mib / ar['collective']:.0f} MiB/s")
        sys.stdout.flush()
    dist.barrier(group=gloo)
    dist.destroy_process_group()


if __name__ == "__main__":
    if len(sys.argv) >= 2 and sys.argv[1] == "worker":
        worker(int(sys.argv[2]))
    elif len(sys.argv) >= 2:
        sys.exit(launch(int(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else 7))
    else:
        print(__doc__)
        sys.exit(2)
