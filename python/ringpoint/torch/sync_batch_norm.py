"""SyncBatchNorm: batch normalization over the batches of every rank.

In training, each channel's mean and variance are those of all ranks'
batches together (the batches may differ in size between ranks, a last
short batch say), the running statistics are updated with them as
torch.nn.BatchNorm updates its own (the unbiased variance for
running_var), and the backward pass gives every rank the gradient of its
part of that joint normalization. Outside training, with running
statistics, it is a plain BatchNorm.

The arithmetic is written in torch operations, so it runs on the CPU as
well as on a GPU (torch's fused sync-BN kernels exist for CUDA only).
Each rank's statistics are its count, mean and sum of squared deviations
from that mean; the ranks' rows are combined in float64 with the
pairwise formula (Chan et al.), which, unlike a sum of squares, loses
nothing to cancellation when the mean is large against the spread.
"""
import torch
import torch.nn.functional as F
from torch.nn.modules.batchnorm import _BatchNorm

from ringpoint._runtime import size
from ringpoint.torch import mpi_ops


def _channel_dims(x):
    # Every dimension but the channels' (dimension 1).
    return [0] + list(range(2, x.dim()))


def _per_channel(v, x):
    """@v, one value per channel, shaped to broadcast against @x."""
    return v.reshape([1, -1] + [1] * (x.dim() - 2))


def _acc_dtype(x):
    # Half-precision inputs are summed in float32, as torch's kernels do.
    return torch.float32 if x.dtype in (torch.float16, torch.bfloat16) else x.dtype


class _SyncBatchNormFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, weight, bias, running_mean, running_var, eps, momentum):
        x = x.contiguous()
        channels = x.size(1)
        count = x.numel() // channels if channels else 0
        dims = _channel_dims(x)
        acc = _acc_dtype(x)
        if count:
            var, mean = torch.var_mean(x.to(acc), dims, unbiased=False)
            mean = mean.to(torch.float64)
            m2 = var.to(torch.float64) * count
        else:
            # An empty batch on this rank: it still takes part, with no weight.
            mean = torch.zeros(channels, dtype=torch.float64, device=x.device)
            m2 = torch.zeros_like(mean)
        row = torch.cat([torch.tensor([float(count)], dtype=torch.float64,
                                      device=x.device), mean, m2])
        rows = mpi_ops.allgather(row.unsqueeze(0))
        counts, means, m2s = rows[:, 0], rows[:, 1:1 + channels], rows[:, 1 + channels:]
        total = float(counts.sum())
        if total <= 1:
            raise ValueError(
                "SyncBatchNorm: expected more than 1 value per channel when "
                "training, got %d over all ranks (input size %s here); give "
                "the ranks larger batches, or put the module in eval mode"
                % (int(total), list(x.shape)))
        g_mean = (counts[:, None] * means).sum(0) / total
        g_m2 = (m2s + counts[:, None] * (means - g_mean) ** 2).sum(0)
        g_var = g_m2 / total
        if running_mean is not None:
            with torch.no_grad():
                running_mean.mul_(1 - momentum).add_(
                    g_mean.to(running_mean.dtype), alpha=momentum)
        if running_var is not None:
            with torch.no_grad():
                running_var.mul_(1 - momentum).add_(
                    (g_m2 / (total - 1)).to(running_var.dtype), alpha=momentum)
        invstd = torch.rsqrt(g_var + eps)
        mean_x, invstd_x = g_mean.to(acc), invstd.to(acc)
        scale = invstd_x if weight is None else invstd_x * weight.to(acc)
        y = (x.to(acc) - _per_channel(mean_x, x)) * _per_channel(scale, x)
        if bias is not None:
            y = y + _per_channel(bias.to(acc), x)
        ctx.save_for_backward(x, weight, mean_x, invstd_x)
        ctx.total = total
        return y.to(x.dtype)

    @staticmethod
    def backward(ctx, dy):
        x, weight, mean, invstd = ctx.saved_tensors
        need_x, need_w, need_b = ctx.needs_input_grad[:3]
        acc = mean.dtype
        dy = dy.contiguous().to(acc)
        dims = _channel_dims(x)
        xmu = x.to(acc) - _per_channel(mean, x)
        sum_dy = dy.sum(dims, dtype=torch.float64)
        sum_dy_xmu = (dy * xmu).sum(dims, dtype=torch.float64)
        grad_x = grad_w = grad_b = None
        if need_x:
            # The input's gradient depends on every rank's dy through the
            # mean and variance: their two per-channel sums, over all ranks.
            both = mpi_ops.allreduce(torch.cat([sum_dy, sum_dy_xmu]),
                                     op=mpi_ops.Sum)
            channels = sum_dy.numel()
            mean_dy = (both[:channels] / ctx.total).to(acc)
            mean_dy_xmu = (both[channels:] / ctx.total).to(acc)
            scale = invstd if weight is None else invstd * weight.to(acc)
            grad_x = (dy - _per_channel(mean_dy, x)
                      - xmu * _per_channel(invstd * invstd * mean_dy_xmu, x)) \
                * _per_channel(scale, x)
            grad_x = grad_x.to(x.dtype)
        # The affine parameters' gradients stay this rank's own, as for any
        # parameter: DistributedOptimizer averages them with the rest.
        if weight is not None and need_w:
            grad_w = (sum_dy_xmu * invstd.to(torch.float64)).to(weight.dtype)
        if weight is not None and need_b:
            grad_b = sum_dy.to(weight.dtype)
        return grad_x, grad_w, grad_b, None, None, None, None


class SyncBatchNorm(_BatchNorm):
    """Batch normalization whose batch statistics are taken over the
    batches of every rank (Horovod's hvd.SyncBatchNorm), for any number of
    spatial dimensions: input (N, C, ...). Every rank must call it, in the
    same order, whenever it runs on batch statistics (training, or no
    running statistics); the ranks' N may differ.

    Arguments as torch.nn.BatchNorm2d's. A torchvision model takes it as
    ``norm_layer=ringpoint.torch.SyncBatchNorm``. Differences from
    Horovod's: inputs on the CPU work too, and momentum=None (a cumulative
    average) works as in torch's BatchNorm.
    """

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True,
                 track_running_stats=True, device=None, dtype=None):
        super().__init__(num_features, eps, momentum, affine,
                         track_running_stats, device=device, dtype=dtype)

    def _check_input_dim(self, input):
        if input.dim() < 2:
            raise ValueError("SyncBatchNorm: expected an input of at least 2 "
                             "dimensions (N, C, ...), got %dD" % input.dim())

    def _factor(self):
        """The running statistics' weight for this batch, as torch's
        BatchNorm takes it (counting the batch first)."""
        if not (self.training and self.track_running_stats):
            return 0.0
        self.num_batches_tracked.add_(1)
        if self.momentum is None:
            return 1.0 / float(self.num_batches_tracked)
        return self.momentum

    def forward(self, input):
        self._check_input_dim(input)
        factor = self._factor()
        if not self.training and self.track_running_stats:
            return F.batch_norm(input, self.running_mean, self.running_var,
                                self.weight, self.bias, False, 0.0, self.eps)
        running_mean = self.running_mean if self.training else None
        running_var = self.running_var if self.training else None
        if size() == 1:
            return F.batch_norm(input, running_mean, running_var, self.weight,
                                self.bias, True, factor, self.eps)
        return _SyncBatchNormFn.apply(input, self.weight, self.bias,
                                      running_mean, running_var, self.eps,
                                      factor)


__all__ = ["SyncBatchNorm"]
