"""ringpoint.torch.DistributedSampler: the same order as torch's, and a
restored sampler continues mid-epoch with exactly the batches an
uninterrupted one would have given (rank-local: no collectives)."""
import pytest
import torch
import torch.utils.data

import ringpoint
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


def test_len_is_what_the_resumed_epoch_yields():
    """len() agrees with the iterator: in the epoch a restore resumes,
    the samples not yet seen (so len(loader) and a loop of
    len(sampler) // batch next() calls do not run past its end); the whole
    share again in any later iteration."""
    data = torch.arange(103)
    s = _sampler()                           # 35 samples per rank
    s.load_state_dict({"epoch": 2, "consumed": 12, "seed": 7, "num_replicas": 3})
    s.set_epoch(2)
    assert len(s) == 23
    loader = torch.utils.data.DataLoader(data, batch_size=4, sampler=s, drop_last=True)
    assert len(loader) == 5
    it = iter(loader)
    got = [next(it) for _ in range(len(s) // 4)]
    assert len(s) == 23                      # while that iteration runs
    assert len(got) == 5 and sum(len(b) for b in got) == 20
    assert len(list(it)) == 0
    assert len(s) == 23 and len(list(s)) == 35 and len(s) == 35
    s.set_epoch(3)
    assert len(s) == 35 == len(list(s))


def test_len_after_a_restore_into_another_epoch():
    s = _sampler()
    s.load_state_dict({"epoch": 2, "consumed": 12, "seed": 7, "num_replicas": 3})
    s.set_epoch(3)                           # that epoch was finished
    assert len(s) == 35 == len(list(s)) and s.num_samples == 35


def test_an_epoch_derived_from_the_shortened_len_is_refused():
    """The trap of len() in a resumed epoch: steps per epoch taken from it
    after a restore give a wrong epoch; set_epoch() refuses it, naming the
    fix, instead of training on other data."""
    s = _sampler()
    s.load_state_dict({"epoch": 2, "consumed": 28, "seed": 7, "num_replicas": 3})
    with pytest.raises(ringpoint.InvalidArgumentError, match="sampler.num_samples"):
        s.set_epoch(23 // (len(s) // 4))     # step 23 (2 * 8 + 7): epoch 23, not 2
    for ok in (2, 3):                        # going on, or the next epoch
        s.load_state_dict({"epoch": 2, "consumed": 28, "seed": 7, "num_replicas": 3})
        s.set_epoch(ok)
    s.set_epoch(7)                           # no restore pending: any epoch
