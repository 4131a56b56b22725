"""Test-session settings shared by every test file."""

import torch

# The tests start brokers and worker processes beside this one; on a small machine two OpenMP threads
# per process spin against each other and run many times slower than one (measured: ~10x on 2 cores).
torch.set_num_threads(1)
