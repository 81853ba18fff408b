# SPDX-License-Identifier: GPL-2.0
# The README's five lines, run by guest-torch.sh under torchrun.
import torch, torch.distributed as dist
import torch_collective                     # PYTHONPATH=userlib/torch
dist.init_process_group("collective")       # env://, e.g. under torchrun
model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(8, 8))
dist.all_reduce(t := torch.ones(4)); print(t)   # world_size everywhere
