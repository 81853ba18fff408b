# SPDX-License-Identifier: MIT
"""torch.distributed backend "collective": collectives through /dev/collective.

    import torch_collective          # registers the backend
    import torch.distributed as dist
    dist.init_process_group("collective")     # env:// (MASTER_ADDR, ...)

Rank 0 of each process group makes a fresh communicator id and publishes it
in torch's Store; the other ranks read it there, then every rank joins the
communicator (COLL_COMM_INIT; with COLL_ROOT=host:port set, across hosts).
"""
from datetime import timedelta

import torch
import torch.distributed as dist

from ._C import ProcessGroupCollective, new_id

__all__ = ["ProcessGroupCollective", "new_id", "create_process_group"]

_ID_KEY = "collective/comm_id"


def create_process_group(store, rank, world_size, timeout=timedelta(minutes=30)):
    """The creator torch.distributed calls (Backend.register_backend)."""
    if rank == 0:
        store.set(_ID_KEY, new_id())
    cid = store.get(_ID_KEY).decode()
    timeout_ms = int(timeout.total_seconds() * 1000) if timeout else 0
    return ProcessGroupCollective(rank, world_size, cid, timeout_ms)


if "COLLECTIVE" not in dist.Backend._plugins:
    dist.Backend.register_backend("collective", create_process_group)
