"""The Adam optimiser of the autoencoders, with torch.optim.Adam's arithmetic.

``torch.optim.Adam`` imports torch's compiler front end (``torch._dynamo``) the first time it
adds its parameters or takes a step, whatever the options: about 1.6-2 s of CPU in every
process that trains, as much as importing torch itself. A deployed SuperNode starts a new
process for every message, so each training round of fmvc-iai paid it once per client.
:class:`Adam` takes the same step, operation for operation, as ``torch.optim.Adam``'s
single-tensor path with its defaults (no weight decay, no AMSGrad, not maximising), which is the
path torch takes for CPU tensors; a test holds the two equal bit for bit.
"""

from __future__ import annotations

from collections.abc import Iterable

import torch


class Adam:
    """Adam (Kingma and Ba, 2015) with bias correction.

    Parameters
    ----------
    params : iterable of torch.Tensor
        The tensors to train (each of any shape); a tensor whose ``grad`` is ``None`` at a step
        is left alone and, until its first gradient, has no moments.
    lr : float
        Step size.
    betas : tuple of float
        Decay rates of the first and second moment estimates.
    eps : float
        Added to the square root of the second moment.
    """

    def __init__(
        self,
        params: Iterable[torch.Tensor],
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
    ) -> None:
        self.params = list(params)
        self.lr = lr
        self.betas = betas
        self.eps = eps
        self._steps = [0] * len(self.params)
        self._moments: list[tuple[torch.Tensor, torch.Tensor] | None] = [None] * len(self.params)

    def zero_grad(self) -> None:
        """Drop every parameter's gradient (``grad = None``, as ``torch.optim`` does by default)."""
        for p in self.params:
            p.grad = None

    @torch.no_grad()
    def step(self) -> None:
        """One Adam step on every parameter that has a gradient."""
        beta1, beta2 = self.betas
        for i, p in enumerate(self.params):
            if p.grad is None:
                continue
            if self._moments[i] is None:
                self._moments[i] = (
                    torch.zeros_like(p, memory_format=torch.preserve_format),
                    torch.zeros_like(p, memory_format=torch.preserve_format),
                )
            exp_avg, exp_avg_sq = self._moments[i]
            self._steps[i] += 1
            step = float(self._steps[i])
            grad = p.grad
            exp_avg.lerp_(grad, 1 - beta1)
            exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
            step_size = self.lr / (1 - beta1**step)
            denom = (exp_avg_sq.sqrt() / (1 - beta2**step) ** 0.5).add_(self.eps)
            p.addcdiv_(exp_avg, denom, value=-step_size)
