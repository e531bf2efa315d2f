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
checkpoint (ringpoint.torch.Checkpoint does this for you when you give it
``batch_size``).
"""
import torch.utils.data


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
        self.consumed = 0      # indices handed out this epoch
        self._skip = 0         # to skip at the next __iter__ (a restore)

    def __iter__(self):
        indices = list(super().__iter__())
        start, self._skip = self._skip, 0
        self.consumed = start
        for i in indices[start:]:
            self.consumed += 1
            yield i

    def __len__(self):
        return self.num_samples

    def set_epoch(self, epoch):
        """Start epoch @epoch (its own shuffle), from its first sample
        unless a restore asked for a position within it."""
        if epoch != self.epoch:
            self._skip = 0
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
        self._skip = self.consumed = consumed
