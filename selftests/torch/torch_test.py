#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""The torch.distributed backend "collective" against Gloo, in a guest.

    torch_test.py launch NRANKS MODE [TIMEOUT]    (as root, module loaded)

launch starts NRANKS processes torchrun-style (MASTER_ADDR, MASTER_PORT,
RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE) and passes rank 0's TAP
through; other ranks' output becomes "# [rN]" lines.  It imports torch and
the backend once and forks the ranks from there, as
torch.multiprocessing.start_processes(start_method="fork") does (under TCG
an import of torch costs tens of seconds of CPU, four ranks' imports most
of the run); each rank then initialises its process group as a fresh one
would.  COLL_TORCH_SPAWN=1 starts each rank as a new interpreter instead
("worker" below).  MODE is one of these or several joined by "+" (run in
that order by the same processes, "ops+ddp"):

  ops   every operation x dtype x reduce op on the default process group
        ("collective", env://) and on a Gloo group in the same process, with
        the same inputs: integers must match exactly, floating point within
        BOUND below; plus the clear errors (unequal all_to_all splits, bool,
        BAND), non-contiguous tensors, async works and their futures.
  ddp   (2 ranks) a seeded MLP trained STEPS steps under DDP with Gloo and
        with collective: final parameters bitwise equal (fp32, 2 ranks), loss
        curves printed; then rank 1 SIGKILLs itself mid-training and rank 0
        must get an exception (not hang) within KILL_BOUND seconds.

TAP lines are printed as "ok 0 name": the shell driver renumbers them.
"""
import os
import signal
import socket
import subprocess
import sys
import time

# Floating point: |got - ref| <= BOUND_ULPS * n * eps(dtype) * (|ref| + 1),
# with n ranks.  A reduction of n values differs from Gloo's only in the
# order of the n-1 roundings (and AVG's division): each is at most half an
# ulp of a partial result no larger than n * max|x| (inputs |x| <= 2).
BOUND_ULPS = 4
KILL_BOUND = 20.0
STEPS = 40


def import_torch():
    import torch
    import torch.distributed as dist
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                    "..", "..", "userlib", "torch"))
    import torch_collective  # noqa: F401  registers "collective"
    return torch, dist


def forked_rank(env, wfd, mode):
    """A rank forked from the launcher: its environment, its output."""
    import warnings
    warnings.simplefilter("ignore")     # as PYTHONWARNINGS=ignore would
    os.environ.clear()
    os.environ.update(env)
    os.dup2(wfd, 1)
    os.dup2(wfd, 2)
    os.close(wfd)
    sys.stdout = os.fdopen(1, "w", buffering=1)
    sys.stderr = os.fdopen(2, "w", buffering=1)
    worker(mode)


class Forked:
    """A forked rank with the part of Popen's interface launch uses."""

    def __init__(self, env, mode):
        import multiprocessing
        rfd, wfd = os.pipe()
        self.proc = multiprocessing.get_context("fork").Process(
            target=forked_rank, args=(env, wfd, mode))
        self.proc.start()
        os.close(wfd)
        self.stdout = os.fdopen(rfd, "r")
        self.returncode = None

    def wait(self, timeout=None):
        self.proc.join(timeout)
        if self.proc.exitcode is None:
            raise subprocess.TimeoutExpired("rank", timeout)
        self.returncode = self.proc.exitcode
        return self.returncode

    def kill(self):
        self.proc.kill()


def launch(nranks, mode, timeout):
    fork = os.environ.get("COLL_TORCH_SPAWN", "0") != "1"
    if fork:
        t0 = time.time()
        import_torch()
        print(f"# launcher: torch imported in {time.time() - t0:.1f} s, "
              f"{nranks} ranks forked from here", flush=True)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    procs = []
    for r in range(nranks):
        env = dict(os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port),
                   RANK=str(r), WORLD_SIZE=str(nranks), LOCAL_RANK=str(r),
                   LOCAL_WORLD_SIZE=str(nranks), PYTHONUNBUFFERED="1",
                   PYTHONWARNINGS="ignore")
        if fork:
            procs.append(Forked(env, mode))
            continue
        procs.append(subprocess.Popen(
            [sys.executable, os.path.abspath(__file__), "worker", mode],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            text=True))
    import threading

    def pump(r, p):
        for line in p.stdout:
            line = line.rstrip("\n")
            if r == 0 and (line.startswith("ok ") or line.startswith("not ok ")
                           or line.startswith("#")):
                print(line, flush=True)
            else:
                print(f"# [r{r}] {line}", flush=True)
    threads = [threading.Thread(target=pump, args=(r, p)) for r, p in enumerate(procs)]
    for t in threads:
        t.start()
    deadline = time.time() + timeout
    rc = 0
    for r, p in enumerate(procs):
        try:
            p.wait(timeout=max(1, deadline - time.time()))
        except subprocess.TimeoutExpired:
            print(f"not ok 0 {mode} np={nranks}: TIMEOUT after {timeout} s", flush=True)
            for q in procs:
                q.kill()
            rc = 1
            break
    for t in threads:
        t.join(5)
    for r, p in enumerate(procs):
        p.wait()
        # In ddp mode rank 1 kills itself on purpose.
        if p.returncode != 0 and not ("ddp" in mode.split("+") and r == 1
                                      and p.returncode == -9):
            print(f"# rank {r} exited with {p.returncode}", flush=True)
            rc = 1
    return rc


# --------------------------------------------------------------------------
# Workers (import torch once, run every case)

def worker(mode):
    modes = mode.split("+")
    if any(m not in ("ops", "ddp") for m in modes):
        print(f"not ok 0 worker: unknown mode {mode!r}", flush=True)
        sys.exit(2)
    torch, dist = import_torch()

    t0 = time.time()
    dist.init_process_group("collective", init_method="env://")
    gloo = dist.new_group(backend="gloo")
    rank, n = dist.get_rank(), dist.get_world_size()
    if rank == 0:
        print(f"# np={n}: init_process_group('collective') + gloo group in "
              f"{time.time() - t0:.1f} s", flush=True)
    results = []   # (name, ok locally, message)
    for m in modes:
        if m == "ops":
            run_ops(torch, dist, gloo, rank, n, results)
        else:
            run_ddp(torch, dist, gloo, rank, n, results)
    report(torch, dist, gloo, rank, results)
    if "ddp" in modes:
        kill_test(torch, dist, rank, n)
    dist.destroy_process_group()


def report(torch, dist, gloo, rank, results):
    """Every rank's verdict per case, through Gloo; rank 0 prints TAP."""
    flags = torch.tensor([0 if ok else 1 for _, ok, _ in results], dtype=torch.int32)
    for name, ok, msg in results:
        if not ok:
            print(f"# rank {rank}: {name}: {msg}", flush=True)
    dist.all_reduce(flags, op=dist.ReduceOp.MAX, group=gloo)
    if rank == 0:
        for (name, _, _), f in zip(results, flags.tolist()):
            print(f"{'not ok' if f else 'ok'} 0 {name}", flush=True)


DTYPES = ["float16", "bfloat16", "float32", "float64", "int8", "uint8", "int32", "int64"]
OPS = ["SUM", "PRODUCT", "MIN", "MAX", "AVG"]
EPS = {"float16": 2.0 ** -10, "bfloat16": 2.0 ** -7, "float32": 2.0 ** -23,
       "float64": 2.0 ** -52}


def make_input(torch, dt, op, shape, seed):
    g = torch.Generator().manual_seed(seed)
    if dt.is_floating_point:
        if op == "PRODUCT":
            x = torch.rand(shape, generator=g, dtype=torch.float64) + 0.5
        else:
            x = torch.rand(shape, generator=g, dtype=torch.float64) * 4 - 2
        return x.to(dt)
    if op == "PRODUCT":
        lo, hi = (0, 4) if dt == torch.uint8 else (-3, 4)
    elif dt == torch.uint8:
        lo, hi = 0, 60
    elif dt == torch.int8:
        lo, hi = -30, 31
    else:
        lo, hi = -100000, 100000
    return torch.randint(lo, hi, shape, generator=g, dtype=torch.int64).to(dt)


class Checker:
    def __init__(self, torch, n):
        self.torch, self.n = torch, n

    def compare(self, got, ref, dtname):
        torch = self.torch
        if got.dtype != ref.dtype or got.shape != ref.shape:
            return f"dtype/shape {got.dtype}{tuple(got.shape)} != {ref.dtype}{tuple(ref.shape)}"
        if not got.dtype.is_floating_point:
            bad = (got != ref).nonzero()
            if bad.numel():
                i = tuple(bad[0].tolist())
                return f"{bad.shape[0]} elements differ, first at {i}: {got[i].item()} != {ref[i].item()}"
            return None
        g, r = got.double(), ref.double()
        bound = BOUND_ULPS * self.n * EPS[dtname] * (r.abs() + 1)
        err = (g - r).abs()
        bad = (err > bound).nonzero()
        if bad.numel():
            i = tuple(bad[0].tolist())
            return (f"{bad.shape[0]} elements beyond the bound, first at {i}: "
                    f"{g[i].item()} vs {r[i].item()} (bound {bound[i].item():.3g})")
        return None


def run_ops(torch, dist, gloo, rank, n, results):
    R = dist.ReduceOp
    chk = Checker(torch, n)
    cnt = 1001 * n          # odd per-rank chunks; a multiple of n for the scatters
    case = 0

    def record(name, fn):
        try:
            msg = fn()
        except Exception as e:  # noqa: BLE001  a failure of the case
            msg = f"exception {type(e).__name__}: {e}"
        results.append((f"np={n} {name}", msg is None, msg))

    def gref(dt):
        """Gloo has no bfloat16: its reference runs in float32 (exact)."""
        return torch.float32 if dt == torch.bfloat16 else dt

    def avg_fix(x, dt):
        if dt.is_floating_point:
            return (x / n).to(dt)
        return torch.div(x, n, rounding_mode="trunc").to(dt)

    def gloo_allreduce(x, op, dt):
        """Gloo's result for x reduced over all ranks, in dtype dt."""
        y = x.to(gref(dt)).clone()
        dist.all_reduce(y, op=R.SUM if op == "AVG" else getattr(R, op), group=gloo)
        return avg_fix(y, dt) if op == "AVG" else y.to(dt)

    for dtname in DTYPES:
        dt = getattr(torch, dtname)
        for opname in OPS:
            op = getattr(R, opname)
            case += 1
            x = make_input(torch, dt, opname, (cnt,), 1000 * case + rank)
            ref = gloo_allreduce(x, opname, dt)

            def t_allreduce():
                y = x.clone()
                dist.all_reduce(y, op=op)
                return chk.compare(y, ref, dtname)
            record(f"all_reduce {dtname} {opname}", t_allreduce)

            def t_coalesced():
                parts = [x[:7].clone(), x[7:500].clone().view(-1, 17), x[500:].clone()]
                dist.all_reduce_coalesced(parts, op=op)
                got = torch.cat([p.reshape(-1) for p in parts])
                return chk.compare(got, ref, dtname)
            record(f"all_reduce_coalesced {dtname} {opname}", t_coalesced)

            root = n - 1

            def t_reduce():
                y = x.clone()
                dist.reduce(y, dst=root, op=op)
                if rank != root:
                    return None
                return chk.compare(y, ref, dtname)
            record(f"reduce {dtname} {opname} root={root}", t_reduce)

            mine = ref.view(n, -1)[rank]

            def t_rs():
                out = torch.empty(cnt // n, dtype=dt)
                dist.reduce_scatter(out, list(x.view(n, -1).unbind(0)), op=op)
                return chk.compare(out, mine, dtname)
            record(f"reduce_scatter {dtname} {opname}", t_rs)

            def t_rsb():
                out = torch.empty(cnt // n, dtype=dt)
                dist._reduce_scatter_base(out, x, op=op)
                return chk.compare(out, mine, dtname)
            record(f"_reduce_scatter_base {dtname} {opname}", t_rsb)

        # The primitives that only move data.
        case += 1
        x = make_input(torch, dt, "SUM", (cnt // n,), 1000 * case + rank)
        gx = x.to(gref(dt))
        root = 1 % n

        def t_bcast():
            y = x.clone()
            dist.broadcast(y, src=root)
            r = gx.clone()
            dist.broadcast(r, src=root, group=gloo)
            return chk.compare(y, r.to(dt), dtname)
        record(f"broadcast {dtname} root={root}", t_bcast)

        gl = [torch.empty_like(gx) for _ in range(n)]
        dist.all_gather(gl, gx, group=gloo)
        gref_cat = torch.cat(gl).to(dt)

        def t_allgather():
            out = [torch.empty_like(x) for _ in range(n)]
            dist.all_gather(out, x)
            return chk.compare(torch.cat(out), gref_cat, dtname)
        record(f"all_gather {dtname}", t_allgather)

        def t_agb():
            out = torch.empty(cnt, dtype=dt)
            dist._all_gather_base(out, x)
            return chk.compare(out, gref_cat, dtname)
        record(f"_all_gather_base {dtname}", t_agb)

        def t_gather():
            out = [torch.empty_like(x) for _ in range(n)] if rank == root else None
            dist.gather(x, out, dst=root)
            r = [torch.empty_like(gx) for _ in range(n)] if rank == root else None
            dist.gather(gx, r, dst=root, group=gloo)
            if rank != root:
                return None
            return chk.compare(torch.cat(out), torch.cat(r).to(dt), dtname)
        record(f"gather {dtname} root={root}", t_gather)

        big = make_input(torch, dt, "SUM", (cnt,), 77 * case)   # same on all ranks

        def t_scatter():
            out = torch.empty(cnt // n, dtype=dt)
            dist.scatter(out, list(big.view(n, -1).unbind(0)) if rank == root else None, src=root)
            r = torch.empty(cnt // n, dtype=gref(dt))
            dist.scatter(r, list(big.to(gref(dt)).view(n, -1).unbind(0)) if rank == root else None,
                         src=root, group=gloo)
            return chk.compare(out, r.to(dt), dtname)
        record(f"scatter {dtname} root={root}", t_scatter)

        xa = make_input(torch, dt, "SUM", (cnt,), 1000 * case + 500 + rank)

        def t_a2a():
            out = torch.empty_like(xa)
            dist.all_to_all_single(out, xa)
            r = torch.empty(cnt, dtype=gref(dt))
            dist.all_to_all_single(r, xa.to(gref(dt)), group=gloo)
            return chk.compare(out, r.to(dt), dtname)
        record(f"all_to_all_single {dtname}", t_a2a)

    # barrier, async works, futures, non-contiguous tensors, errors
    record("barrier", lambda: dist.barrier())

    def t_async():
        xs = [make_input(torch, torch.float64, "SUM", (4096,), 9000 + 10 * i + rank) for i in range(8)]
        ys = [v.clone() for v in xs]
        works = [dist.all_reduce(y, async_op=True) for y in ys]
        futs = [w.get_future() for w in works]
        for w in works:
            w.wait()
        for i, (v, y, f) in enumerate(zip(xs, ys, futs)):
            if not works[i].is_completed():
                return f"work {i} not completed after wait()"
            r = v.clone()
            dist.all_reduce(r, group=gloo)
            m = chk.compare(y, r, "float64") or chk.compare(f.wait()[0], r, "float64")
            if m:
                return f"request {i}: {m}"
        return None
    record("8 async all_reduce, wait(), is_completed(), get_future()", t_async)

    def t_noncontig():
        base = make_input(torch, torch.float32, "SUM", (64, 3 * n), 9100 + rank)
        r = base.clone()
        dist.all_reduce(r, group=gloo)
        y = base.t()                       # non-contiguous view
        dist.all_reduce(y)
        m = chk.compare(base, r, "float32")
        if m:
            return "all_reduce of a transposed view: " + m
        out = torch.empty(3, 64 * n).t()          # non-contiguous output
        src = make_input(torch, torch.float32, "SUM", (64 * n, 3), 9200 + rank)[::n]
        dist._all_gather_base(out, src)
        gl = [torch.empty(64, 3) for _ in range(n)]
        dist.all_gather(gl, src.contiguous(), group=gloo)
        m = chk.compare(out, torch.cat(gl), "float32")
        return m and "_all_gather_base, strided input and output: " + m
    record("non-contiguous input and output tensors", t_noncontig)

    def expect_error(fn, words):
        try:
            fn()
        except RuntimeError as e:
            s = str(e)
            missing = [w for w in words if w not in s]
            return f"message lacks {missing}: {s}" if missing else None
        return "no error raised"

    def unequal():
        out = torch.empty(n * 2, dtype=torch.float32)
        sp = [2] * n
        sp[0], sp[-1] = 1, 3
        dist.all_to_all_single(out, torch.zeros(n * 2), sp, sp)
    record("all_to_all_single, unequal splits: clear error",
           lambda: expect_error(unequal, ["unequal", "not supported", "AlltoAllv"]))
    record("bool tensor: clear error",
           lambda: expect_error(lambda: dist.all_reduce(torch.ones(3, dtype=torch.bool)),
                                ["unsupported dtype", "Bool"]))
    record("ReduceOp.BAND: clear error",
           lambda: expect_error(lambda: dist.all_reduce(torch.ones(3, dtype=torch.int32), op=R.BAND),
                                ["unsupported ReduceOp"]))
    record("complex128: clear error",
           lambda: expect_error(lambda: dist.broadcast(torch.ones(3, dtype=torch.complex128), 0),
                                ["unsupported dtype"]))
    record("communicator still usable after refused calls", t_async)


# --------------------------------------------------------------------------
# DDP

def build(torch, seed):
    torch.manual_seed(seed)
    return torch.nn.Sequential(
        torch.nn.Linear(32, 64), torch.nn.ReLU(),
        torch.nn.Linear(64, 64), torch.nn.ReLU(),
        torch.nn.Linear(64, 4))


def data(torch, rank, step):
    g = torch.Generator().manual_seed(100000 * rank + step)
    x = torch.randn(16, 32, generator=g)
    y = (x[:, :4] * 2 - x[:, 4:8]).sin() + 0.1 * torch.randn(16, 4, generator=g)
    return x, y


def train(torch, pg, rank, steps, die_at=None):
    from torch.nn.parallel import DistributedDataParallel as DDP
    model = DDP(build(torch, 1234), process_group=pg)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    losses = []
    for s in range(steps):
        if die_at is not None and s == die_at:
            os.kill(os.getpid(), signal.SIGKILL)
        x, y = data(torch, rank, s)
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return model.module, losses


def run_ddp(torch, dist, gloo, rank, n, results):
    coll = dist.group.WORLD
    t = time.time()
    m_g, l_g = train(torch, gloo, rank, STEPS)
    tg = time.time() - t
    t = time.time()
    m_c, l_c = train(torch, coll, rank, STEPS)
    tc = time.time() - t
    if rank == 0:
        print(f"# DDP {STEPS} steps, np={n}: gloo {tg:.2f} s, collective {tc:.2f} s", flush=True)
        print("# step  loss(gloo)      loss(collective)", flush=True)
        for s in range(0, STEPS, 4):
            print(f"# {s:4d}  {l_g[s]:.8f}  {l_c[s]:.8f}", flush=True)
        print(f"# {STEPS - 1:4d}  {l_g[-1]:.8f}  {l_c[-1]:.8f}", flush=True)
    diff = []
    for (name, a), b in zip(m_g.named_parameters(), m_c.parameters()):
        if not torch.equal(a, b):
            diff.append(f"{name}: max |diff| {(a - b).abs().max().item():.3g}")
    results.append((f"DDP np={n} fp32: {STEPS} steps, parameters bitwise equal to Gloo's",
                    not diff, "; ".join(diff)))
    results.append((f"DDP np={n}: loss curves identical", l_g == l_c,
                    f"first difference at step {next((i for i, (a, b) in enumerate(zip(l_g, l_c)) if a != b), -1)}"))
    # The other ranks' replicas agree with this one (through Gloo).
    flat = torch.cat([p.detach().reshape(-1) for p in m_c.parameters()])
    lo, hi = flat.clone(), flat.clone()
    dist.all_reduce(lo, op=dist.ReduceOp.MIN, group=gloo)
    dist.all_reduce(hi, op=dist.ReduceOp.MAX, group=gloo)
    results.append((f"DDP np={n}: replicas identical on every rank",
                    torch.equal(lo, hi), "replicas differ"))


def kill_test(torch, dist, rank, n):
    """Rank 1 is SIGKILLed at step 5; rank 0 must raise, not hang."""
    coll = dist.group.WORLD
    if rank == 1:
        train(torch, coll, rank, 1000, die_at=5)
        return
    t = time.time()
    try:
        train(torch, coll, rank, 1000)
        msg = "training went on after rank 1 died"
    except RuntimeError as e:
        dt = time.time() - t
        s = str(e).splitlines()[0]
        print(f"# rank 0 raised after {dt:.1f} s: {s}", flush=True)
        msg = None if "ECONNRESET" in str(e) else f"exception lacks ECONNRESET: {s}"
        if msg is None and dt > KILL_BOUND:
            msg = f"took {dt:.1f} s (bound {KILL_BOUND} s)"
    print(f"{'not ok' if msg else 'ok'} 0 DDP np={n}: rank 1 SIGKILLed mid-training, "
          f"rank 0 raises (ECONNRESET) within {KILL_BOUND:.0f} s", flush=True)
    if msg:
        print(f"# {msg}", flush=True)
    os._exit(0)   # the communicator is dead; skip the teardown barrier


if __name__ == "__main__":
    if len(sys.argv) >= 4 and sys.argv[1] == "launch":
        sys.exit(launch(int(sys.argv[2]), sys.argv[3],
                        float(sys.argv[4]) if len(sys.argv) > 4 else 600))
    if len(sys.argv) == 3 and sys.argv[1] == "worker":
        worker(sys.argv[2])
        sys.exit(0)
    print(__doc__)
    sys.exit(2)
