"""A DistributedSampler that resumes mid-epoch at the exact sample.

torch.utils.data.DistributedSampler shards a data set across ranks and
reshuffles it each epoch (set_epoch), but after a restart it begins the
epoch again from its first sample: the samples before the stop are seen
twice and the run is no longer the uninterrupted one. This one also counts
the indices it has handed out in the current epoch, keeps that count in
its state_dict(), and after load_state_dict() skips exactly those.

The count is of indices handed to the DataLoader, so it is exact with
``num_workers=0``. With worker processes the DataLoader asks for
``prefetch_factor * num_workers`` batches ahead: pass the number of
samples actually consumed instead, with ``set_consumed(n)`` before the
checkpoint.

len() is what an iteration yields, as for any torch sampler: the epoch a
restore resumes holds only the samples not yet seen, len() says so (and
with it the DataLoader's len()) until that iteration is done; every other
epoch holds ``num_samples``, the whole rank's share. Derive the epoch
from the step and ``num_samples``, not from len(): right after a restore,
set_epoch() refuses any epoch but the restored one and the next.

ringpoint.torch.Checkpoint also takes torch's own DistributedSampler: it
makes that one (exactly that class, not a subclass) an instance of this
one in place, so the DataLoader that holds it resumes as well.
"""
import torch.utils.data

from ringpoint._errors import InvalidArgumentError


class DistributedSampler(torch.utils.data.DistributedSampler):
    """torch's DistributedSampler (same arguments and order of samples)
    that can resume within an epoch."""

    def __init__(self, dataset, num_replicas=None, rank=None, shuffle=True,
                 seed=0, drop_last=False):
        if num_replicas is None or rank is None:
            import ringpoint
            if ringpoint.is_initialized():
                num_replicas = ringpoint.size() if num_replicas is None else num_replicas
                rank = ringpoint.rank() if rank is None else rank
        super().__init__(dataset, num_replicas=num_replicas, rank=rank,
                         shuffle=shuffle, seed=seed, drop_last=drop_last)
        self._resumable()

    def _resumable(self):
        self.consumed = 0      # indices handed out this epoch
        self._skip = 0         # to skip at the next __iter__ (a restore)
        self._len_skip = 0     # skipped by the iteration len() describes

    @classmethod
    def _adopt(cls, sampler):
        """Make @sampler, a torch.utils.data.DistributedSampler, one of
        these in place (same attributes, same order of samples): the
        DataLoader already holds that very object."""
        sampler.__class__ = cls
        sampler._resumable()
        return sampler

    def __iter__(self):
        indices = list(super().__iter__())
        start, self._skip = self._skip, 0
        self._len_skip = start
        self.consumed = start
        for i in indices[start:]:
            self.consumed += 1
            yield i

    def __len__(self):
        # The indices the pending (or running) iteration yields: fewer in
        # the epoch a restore resumes, so that len(loader) and a loop of
        # len(sampler) // batch next() calls agree with the iterator.
        return self.num_samples - (self._skip or self._len_skip)

    def set_epoch(self, epoch):
        """Start epoch @epoch (its own shuffle), from its first sample
        unless a restore asked for a position within it."""
        if epoch != self.epoch:
            if self._skip and epoch not in (self.epoch, self.epoch + 1):
                # Only the restored epoch (to go on in it) or the next (it
                # was done) can follow a restore: another is most likely
                # an epoch derived from len(), which a resumed epoch makes
                # shorter, and would train on other data than the
                # uninterrupted run did.
                raise InvalidArgumentError(
                    "DistributedSampler.set_epoch(%d) right after a restore to "
                    "sample %d of epoch %d: the run would leave the %d samples "
                    "left of that epoch out and go on with another. Derive the "
                    "epoch from the step and sampler.num_samples (the whole "
                    "epoch), not len(sampler) (what is left of a resumed "
                    "epoch); to start afresh at another epoch, restore "
                    "without the sampler (Checkpoint.restore(only=...))"
                    % (epoch, self._skip, self.epoch, len(self)))
            self._skip = self._len_skip = 0
            self.consumed = 0
        super().set_epoch(epoch)

    def set_consumed(self, n):
        """Record that @n samples of this epoch were really used."""
        self.consumed = int(n)

    def state_dict(self):
        return {"epoch": int(self.epoch), "consumed": int(self.consumed),
                "seed": int(self.seed), "num_replicas": int(self.num_replicas)}

    def load_state_dict(self, state):
        self.epoch = int(state["epoch"])
        self.seed = int(state.get("seed", self.seed))
        consumed = int(state["consumed"])
        if int(state.get("num_replicas", self.num_replicas)) != self.num_replicas:
            # Another world size shards the epoch differently: the same
            # fraction of it is the best continuation there is.
            total = int(state["num_replicas"]) * consumed
            consumed = total // self.num_replicas
        self._skip = self.consumed = max(0, min(consumed, self.num_samples))
        self._len_skip = 0
