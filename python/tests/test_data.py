"""ringpoint.torch.DistributedSampler: the same order as torch's, and a
restored sampler continues mid-epoch with exactly the batches an
uninterrupted one would have given (rank-local: no collectives)."""
import torch
import torch.utils.data

import ringpoint.torch as hvd


def _sampler(n=103, replicas=3, rank=1, **kw):
    return hvd.DistributedSampler(list(range(n)), num_replicas=replicas,
                                  rank=rank, seed=7, **kw)


def test_same_order_as_torch():
    for epoch in (0, 1, 5):
        ours, theirs = _sampler(), torch.utils.data.DistributedSampler(
            list(range(103)), num_replicas=3, rank=1, seed=7)
        ours.set_epoch(epoch)
        theirs.set_epoch(epoch)
        assert list(ours) == list(theirs)


def test_resume_mid_epoch_gives_the_same_following_batches():
    data = torch.arange(103)
    full = _sampler()
    full.set_epoch(2)
    want = [b.tolist() for b in torch.utils.data.DataLoader(data, batch_size=4, sampler=full)]
    first = _sampler()
    first.set_epoch(2)
    it = iter(torch.utils.data.DataLoader(data, batch_size=4, sampler=first))
    got = [next(it).tolist() for _ in range(3)]
    state = first.state_dict()
    assert state["consumed"] == 12 and state["epoch"] == 2
    second = _sampler()
    second.load_state_dict(state)
    second.set_epoch(2)             # what the training loop calls again
    got += [b.tolist() for b in torch.utils.data.DataLoader(data, batch_size=4,
                                                            sampler=second)]
    assert got == want


def test_next_epoch_starts_from_its_first_sample():
    s = _sampler()
    s.load_state_dict({"epoch": 2, "consumed": 12, "seed": 7, "num_replicas": 3})
    s.set_epoch(3)
    fresh = _sampler()
    fresh.set_epoch(3)
    assert list(s) == list(fresh)


def test_other_world_size_keeps_the_fraction_done():
    s = _sampler(replicas=2, rank=0)
    s.load_state_dict({"epoch": 1, "consumed": 10, "seed": 7, "num_replicas": 3})
    assert s.consumed == 15          # 30 of the epoch's samples seen in all
