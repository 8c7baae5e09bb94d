"""FlatModel: parameters and gradients are views of two flat buffers, gradients equal autograd's."""
import torch
import torch.nn as nn
import torch.nn.functional as F

from fedflat.training.fl.flat import FlatModel, initial_vector


def test_grad_at_equals_autograd_and_writes_views():
    torch.manual_seed(0)
    net = nn.Sequential(nn.Conv2d(1, 2, 3), nn.BatchNorm2d(2), nn.ReLU(), nn.Flatten(), nn.Linear(2 * 4 * 4, 3))
    ref = nn.Sequential(nn.Conv2d(1, 2, 3), nn.BatchNorm2d(2), nn.ReLU(), nn.Flatten(), nn.Linear(2 * 4 * 4, 3))
    ref.load_state_dict(net.state_dict())
    theta0 = initial_vector(net)
    fm = FlatModel(net)
    x, y = torch.randn(4, 1, 6, 6), torch.tensor([0, 1, 2, 1])
    point = theta0 + 0.01 * torch.randn_like(theta0)
    loss, g = fm.grad_at(point, x, y)
    # reference: same point through plain autograd on an independent copy
    with torch.no_grad():
        off = 0
        for p in ref.parameters():
            p.copy_(point[off : off + p.numel()].view_as(p))
            off += p.numel()
    ref_loss = F.cross_entropy(ref(x), y)
    grads = torch.autograd.grad(ref_loss, list(ref.parameters()))
    torch.testing.assert_close(loss, ref_loss.detach())
    torch.testing.assert_close(g, torch.cat([q.reshape(-1) for q in grads]))
    # params really are views: writing the flat buffer changes the module
    fm.flat.zero_()
    assert all(float(p.detach().abs().sum()) == 0 for p in net.parameters())
    # a second evaluation overwrites (does not accumulate) the gradient
    _, g2 = fm.grad_at(point, x, y)
    torch.testing.assert_close(g2, torch.cat([q.reshape(-1) for q in grads]))
    assert fm.num_buffer == 2 + 2  # BN running mean and var (num_batches_tracked is not float)
