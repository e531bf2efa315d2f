"""DistributedOptimizer: gradients averaged across ranks while backward()
still runs.

Parameters are put in buckets (reverse registration order, which is about
the order backward() produces their gradients; one dtype per bucket, at
most RINGPOINT_FUSION_BYTES each, default 4 MiB). A hook on each
parameter's gradient accumulator counts the gradients that are ready; a
full bucket starts one fused non-blocking allreduce (rp_iallreduce_group)
in place on the gradients, which the library's progress thread carries out
while backward() goes on. step() waits for them and then updates.

Buckets are started strictly in bucket order (a bucket that is full early
waits for the ones before it), so every rank starts the same collectives in
the same order whatever order its hooks fire in. The layout is checked
across ranks once, when the optimizer is made. Gradients missing at step()
(a parameter unused this step) are taken as zeros, as Horovod does.
"""
import contextlib
import ctypes
import os
import warnings

import torch

from ringpoint import _coll
from ringpoint._errors import InvalidArgumentError, check
from ringpoint.torch import _pset
from ringpoint.torch import mpi_ops
from ringpoint.torch.compression import Compression
from ringpoint.torch.mpi_ops import Average, Sum, _lib, lib


def _fusion_bytes():
    text = os.environ.get("RINGPOINT_FUSION_BYTES", str(4 << 20))
    try:
        value = int(text)
    except ValueError:
        raise InvalidArgumentError("RINGPOINT_FUSION_BYTES=%r: expected a "
                                   "number of bytes" % text) from None
    return max(value, 1)


class _Bucket:
    __slots__ = ("index", "params", "ready", "req", "dtype", "sig")

    def __init__(self, index, dtype):
        self.index, self.dtype = index, dtype
        self.params, self.ready, self.req = [], 0, None
        self.sig = None


class _DistributedOptimizer(torch.optim.Optimizer):
    def __init__(self, params, named_parameters, compression,
                 backward_passes_per_step, op, gradient_predivide_factor):
        super(self.__class__, self).__init__(params)
        what = "DistributedOptimizer"
        # The process set it averages over: the scope it is made in.
        self._rp_ps = _pset.current()
        with _coll.checking(what):
            op = mpi_ops._op_of(op, None, what)     # Adasum: NotSupportedError
            if op not in (Average, Sum):
                raise InvalidArgumentError("%s: op must be Average or Sum" % what)
            if backward_passes_per_step < 1:
                raise InvalidArgumentError("%s: backward_passes_per_step must be "
                                           ">= 1" % what)
            self._rp_op = op
            self._rp_compression = compression
            self._rp_passes = int(backward_passes_per_step)
            self._rp_predivide = float(gradient_predivide_factor)
            all_params = [p for g in self.param_groups for p in g["params"]
                          if p.requires_grad]
            if named_parameters is not None:
                named = list(named_parameters)
                names = [n for n, _ in named]
                if len(set(names)) != len(names):
                    raise InvalidArgumentError("%s: named_parameters has duplicate "
                                               "names" % what)
                by_id = {id(p): n for n, p in named}
                missing = [p for p in all_params if id(p) not in by_id]
                if missing:
                    raise InvalidArgumentError(
                        "%s: %d parameters of the optimizer are not in "
                        "named_parameters" % (what, len(missing)))
                self._rp_names = {id(p): by_id[id(p)] for p in all_params}
            else:
                self._rp_names = {id(p): "param.%d" % i
                                  for i, p in enumerate(all_params)}
            self._rp_buckets = []
            self._rp_bucket_of = {}
            cap = _fusion_bytes()
            open_by_dtype = {}
            for p in reversed(all_params):
                b = open_by_dtype.get(p.dtype)
                nbytes = p.numel() * p.element_size()
                if b is None or (b.params and sum(q.numel() * q.element_size()
                                                  for q in b.params) + nbytes > cap):
                    b = _Bucket(len(self._rp_buckets), p.dtype)
                    self._rp_buckets.append(b)
                    open_by_dtype[p.dtype] = b
                b.params.append(p)
                self._rp_bucket_of[p] = b
            for p in all_params:
                mpi_ops._dtype(p, what)
        ctx = _pset.handle_of(self._rp_ps, what)
        _coll.verify(ctx, what, (what, op, self._rp_passes, str(compression),
                                 tuple(tuple((self._rp_names[id(p)], str(p.dtype),
                                              tuple(p.shape)) for p in b.params)
                                       for b in self._rp_buckets)))
        self._rp_delay = {p: self._rp_passes for p in all_params}
        self._rp_next = 0
        self._rp_started = []
        self._rp_synchronized = False
        self._rp_should_sync = True
        self._rp_grad_accs = []
        for p in all_params:
            with torch.enable_grad():
                acc = p.expand_as(p).grad_fn.next_functions[0][0]
            acc.register_hook(self._rp_make_hook(p))
            self._rp_grad_accs.append(acc)

    def _rp_make_hook(self, p):
        def hook(*_):
            if self._rp_delay[p] <= 0:
                raise AssertionError(
                    "Gradients were computed more than backward_passes_per_step "
                    "times before optimizer.step() or synchronize(); raise "
                    "backward_passes_per_step to accumulate gradients locally")
            self._rp_delay[p] -= 1
            if self._rp_delay[p] == 0:
                b = self._rp_bucket_of[p]
                b.ready += 1
                self._rp_start_ready()
        return hook

    def _rp_start_ready(self):
        buckets = self._rp_buckets
        while self._rp_next < len(buckets) and \
                buckets[self._rp_next].ready == len(buckets[self._rp_next].params):
            self._rp_start(buckets[self._rp_next])
            self._rp_next += 1

    def _rp_start(self, b):
        what = "DistributedOptimizer"
        grads = []
        for p in b.params:
            if p.grad is None:
                p.grad = torch.zeros_like(p)
            elif p.grad.is_sparse:
                # An Embedding(sparse=True)'s: averaged as dense, as Horovod
                # does with sparse_as_dense=True (the buckets are dense).
                p.grad = p.grad.to_dense()
            elif not p.grad.is_contiguous():
                p.grad = p.grad.contiguous()
            grads.append(p.grad)
        if self._rp_predivide != 1.0:
            for g in grads:
                g.div_(self._rp_predivide)
        n = len(grads)
        ptrs = (ctypes.c_void_p * n)(*[g.data_ptr() for g in grads])
        counts = (ctypes.c_size_t * n)(*[g.numel() for g in grads])
        dt = mpi_ops._dtype(grads[0], what)
        # Checked, so that a rank that has joined (hvd.join) can stand in
        # with zeros: the signature of the bucket, the same every step.
        if b.sig is None:
            b.sig = _coll.c_signature(("DistributedOptimizer bucket", b.index,
                                       str(b.dtype), tuple(counts),
                                       str(self._rp_compression)))
        opts = _lib.AllreduceOpts(self._rp_compression.wire_format(dt), b.sig)
        req = _lib.req_t()
        check(lib.rp_iallreduce_group(_pset.handle_of(self._rp_ps, what), ptrs, ptrs, counts,
                                      n, dt, self._rp_op, ctypes.byref(opts),
                                      ctypes.byref(req)), what)
        b.req = (req, grads)
        self._rp_started.append(b)

    def synchronize(self):
        """Finish averaging the gradients (starting what backward() did not)."""
        what = "DistributedOptimizer.synchronize"
        while self._rp_next < len(self._rp_buckets):
            self._rp_start(self._rp_buckets[self._rp_next])
            self._rp_next += 1
        status = 0
        for b in self._rp_started:
            req, grads = b.req
            s = lib.rp_wait(ctypes.byref(req))
            status = status or s
            if self._rp_predivide != 1.0:
                for g in grads:
                    g.mul_(self._rp_predivide)
            b.req, b.ready = None, 0
        self._rp_started = []
        self._rp_next = 0
        for p in self._rp_delay:
            self._rp_delay[p] = self._rp_passes
        check(status, what)
        self._rp_synchronized = True

    @contextlib.contextmanager
    def skip_synchronize(self):
        """Inside, step() does not synchronize (call synchronize() first, e.g.
        to clip the averaged gradients)."""
        self._rp_should_sync = False
        try:
            yield
        finally:
            self._rp_should_sync = True

    def step(self, closure=None):
        if self._rp_should_sync:
            if self._rp_synchronized:
                warnings.warn("optimizer.step() called without "
                              "optimizer.skip_synchronize() after "
                              "optimizer.synchronize(): the gradients are "
                              "averaged once, not twice")
            else:
                self.synchronize()
        self._rp_synchronized = False
        return super(self.__class__, self).step(closure)

    def zero_grad(self, set_to_none=False):
        if self._rp_started:
            raise AssertionError(
                "optimizer.zero_grad() was called after loss.backward() but "
                "before optimizer.step() or optimizer.synchronize(): the "
                "gradients are being averaged")
        return super(self.__class__, self).zero_grad(set_to_none)


def DistributedOptimizer(optimizer, named_parameters=None,
                         compression=Compression.none,
                         backward_passes_per_step=1, op=Average,
                         gradient_predivide_factor=1.0, num_groups=0,
                         groups=None, sparse_as_dense=False,
                         process_set=None):
    """Wrap @optimizer so that step() uses gradients averaged across ranks.

    As Horovod: returns a new optimizer of @optimizer's class over the same
    param_groups; use it in place of @optimizer. Collective: every rank
    must make it, with the same parameters. Gradients are averaged with
    fused allreduces started from hooks while backward() runs;
    @backward_passes_per_step > 1 accumulates that many backward passes
    locally before averaging. @compression: Compression.fp16 or .bf16 send
    float32 gradients at half width. @num_groups, @groups, @sparse_as_dense
    are accepted for compatibility (buckets are formed by size; sparse
    gradients are always averaged as dense, as with sparse_as_dense=True).
    With @process_set, gradients are averaged among its members; on a rank
    outside it, @optimizer itself is returned (it steps alone).
    """
    if isinstance(process_set, _pset.ProcessSet) and \
            process_set.process_set_id not in (None, 0) and \
            not process_set.included():
        # Not a member (every rank may make it, as Horovod's tests do):
        # this rank trains alone, its gradients averaged with no one.
        return optimizer
    ps = mpi_ops._process_set(process_set, "DistributedOptimizer")
    cls = type(optimizer.__class__.__name__, (optimizer.__class__,),
               dict(_DistributedOptimizer.__dict__))
    with _pset.scope(ps):
        return cls(optimizer.param_groups, named_parameters, compression,
                   backward_passes_per_step, op, gradient_predivide_factor)
