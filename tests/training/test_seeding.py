"""Generator states in checkpoints (agentsum/training/seeding.py); the CUDA path runs against
monkeypatched ``torch.cuda`` functions."""

import random

import torch

from agentsum.training import seeding


def test_states_round_trip_on_the_cpu():
    seeding.seed_process(5, rank=2)
    state = seeding.rng_state(torch.device("cpu"))
    assert "cuda" not in state
    expected = (torch.rand(3), random.random())
    torch.rand(7)  # move on
    seeding.set_rng_state(state, torch.device("cpu"))
    assert torch.equal(torch.rand(3), expected[0]) and random.random() == expected[1]


def test_ranks_draw_different_numbers_from_one_seed():
    seeding.seed_process(5, rank=0)
    first = torch.rand(4)
    seeding.seed_process(5, rank=1)
    assert not torch.equal(torch.rand(4), first)
    seeding.seed_process(5, rank=0)
    assert torch.equal(torch.rand(4), first)


def test_the_cuda_generator_of_the_process_device_is_saved_and_restored(monkeypatch):
    calls = []
    cuda_state = torch.arange(16, dtype=torch.uint8)
    monkeypatch.setattr(torch.cuda, "get_rng_state", lambda device="cuda": calls.append(("get", device)) or cuda_state)
    monkeypatch.setattr(torch.cuda, "set_rng_state", lambda state, device="cuda": calls.append(("set", device, state)))
    gpu = torch.device("cuda", 1)
    state = seeding.rng_state(gpu)
    assert torch.equal(state["cuda"], cuda_state) and calls == [("get", gpu)]
    seeding.set_rng_state(state, gpu)
    assert calls[1][:2] == ("set", gpu) and torch.equal(calls[1][2], cuda_state)
    seeding.set_rng_state(state, torch.device("cpu"))  # a GPU checkpoint resumed on the CPU
    assert len(calls) == 2


def test_which_state_each_process_resumes_with():
    a, b = {"torch": "rank0"}, {"torch": "rank1"}
    two = {"rng": a, "rng_ranks": [a, b]}
    assert seeding.state_for_rank(two, 0, 2) is a and seeding.state_for_rank(two, 1, 2) is b
    assert seeding.state_for_rank(two, 0, 1) is a  # 2 -> 1 process: rank 0's
    one = {"rng": a}
    assert seeding.state_for_rank(one, 0, 2) is a and seeding.state_for_rank(one, 1, 2) is None  # keeps its seed
    assert seeding.state_for_rank({}, 0, 1) is None  # checkpoints without generator states
