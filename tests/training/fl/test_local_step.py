"""The local step's typed inputs (training/fl/local_step.py): vmap's in_dims come from the structure itself."""
import pytest
import torch

from fedflat.training.fl.local_step import RoundTerms, StepBatch, StepState, new_state, stack_clients, unstack_into


def test_stack_clients_maps_what_differs_and_shares_what_is_one_tensor():
    shared, lr = torch.arange(6.0), torch.tensor(0.1)
    items = [RoundTerms(lr, None, 0.5, 0.0, torch.full((3,), float(i)), shared) for i in range(2)]
    stacked, dims = stack_clients(items)
    assert dims == RoundTerms(None, None, None, None, 0, None)
    assert stacked.lr is lr and stacked.dir_c is shared and stacked.lin_a == 0.5
    assert torch.equal(stacked.lin_c, torch.tensor([[0.0] * 3, [1.0] * 3]))


def test_the_state_is_always_per_client_and_written_back():
    w = torch.zeros(4)
    states = [new_state(w.clone(), 0.9), new_state(w.clone(), 0.9)]
    stacked, dims = stack_clients(states)
    assert dims == StepState(0, 0, 0, None, None) and stacked.w.shape == (2, 4)
    stacked.w[1].fill_(7.0)
    stacked.loss_sum.add_(torch.tensor([1.0, 2.0]))
    unstack_into(stacked, states)
    assert torch.equal(states[1].w, torch.full((4,), 7.0)) and torch.equal(states[0].w, w)
    assert [float(s.loss_sum) for s in states] == [1.0, 2.0]


def test_a_number_or_a_none_that_differs_across_clients_names_the_field():
    x, y = torch.zeros(2, 3), torch.zeros(2)
    with pytest.raises(ValueError, match="StepBatch.beta"):
        stack_clients([StepBatch(x, y, None, 0.5), StepBatch(x, y, None, 0.9)])
    with pytest.raises(ValueError, match="StepBatch.xs"):
        stack_clients([StepBatch(x, y, None, 0.5, x, y), StepBatch(x, y, None, 0.5)])
