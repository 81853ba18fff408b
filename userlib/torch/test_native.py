#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Native checks of torch_collective (no device, no guest): TAP."""
import os
import sys
from datetime import timedelta

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch.distributed as dist  # noqa: E402
import torch_collective as tc  # noqa: E402

n = 0


def check(cond, name):
    global n
    n += 1
    print(f"{'ok' if cond else 'not ok'} {n} {name}")
    return cond


i = tc.new_id()
check(len(i) == 32 and int(i, 16) >= 0 and tc.new_id() != i, "new_id: 32 fresh hex digits")
check("COLLECTIVE" in dist.Backend._plugins and dist.Backend("collective") == "collective",
      "backend 'collective' registered")
os.environ["COLL_DEVICE"] = "/nonexistent/collective"
try:
    tc.ProcessGroupCollective(0, 1, i, 1000)
    check(False, "no device: init raises")
except RuntimeError as e:
    check("ENOENT" in str(e) and "joining the communicator" in str(e),
          f"no device: init raises naming ENOENT ({e})")
try:
    tc.ProcessGroupCollective(0, 1, "xyz", 1000)
    check(False, "bad id: init raises")
except RuntimeError as e:
    check("bad communicator id" in str(e), "bad id: init raises")
store = dist.HashStore()
try:
    tc.create_process_group(store, 0, 1, timedelta(seconds=1))
except RuntimeError:
    pass
check(len(store.get("collective/comm_id")) == 32, "rank 0 publishes the id in the Store")
print(f"1..{n}")
