"""`python numerics_probe.py MODE`: enter MODE the way the entry points do (before torch loads), train a small MLP
for 150 SGD steps and print the capability torch runs and the SHA-256 of the final weights (tests/core/util/test_numerics.py)."""
import hashlib
import sys

from fedflat.core.util.numerics import enter

enter(sys.argv[1])

import torch  # noqa: E402  (after enter: the kernel settings are read when torch loads)
import torch.nn.functional as F  # noqa: E402

from fedflat.core.util.numerics import _pin_torch  # noqa: E402

if sys.argv[1] == "portable":
    _pin_torch()
torch.manual_seed(0)
w1, w2 = torch.randn(64, 32, requires_grad=True), torch.randn(32, 10, requires_grad=True)
x, y = torch.randn(512, 64), torch.randint(0, 10, (512,))
for step in range(150):
    idx = torch.randint(0, 512, (64,))
    loss = F.cross_entropy(torch.relu(x[idx] @ w1) @ w2, y[idx])  # GEMMs (MKL), ReLU, softmax, reductions (ATen)
    g1, g2 = torch.autograd.grad(loss, (w1, w2))
    with torch.no_grad():
        w1 -= 0.05 * g1
        w2 -= 0.05 * g2
digest = hashlib.sha256(w1.detach().numpy().tobytes() + w2.detach().numpy().tobytes()).hexdigest()
print(torch.backends.cpu.get_cpu_capability(), digest)
