"""An in-process run of paper A's kernels (no Flower): the reference the adapters must match."""

from dataclasses import dataclass, field

import numpy as np

from fedmf_app.common.seeding import Stream, rng_for
from fedmf_app.data.synthetic import SyntheticSpec, make_synthetic_view
from fedmf_app.methods.sonmf.nonneg_orth import random_feasible_basis
from fedmf_app.methods.sonmf.prox import prox_l21_nonneg
from fedmf_app.methods.sonmf.residuals import residual_v
from fedmf_app.methods.sonmf.updates import (
    SONMFParams,
    client_diagnostics,
    local_round,
    regulariser,
    server_step,
)


@dataclass
class KernelFederation:
    xs: list
    params: SONMFParams
    seed: int = 0
    us: list = field(default_factory=list)
    v_prev: list = field(default_factory=list)
    grad_prev: list = field(default_factory=list)
    history: list = field(default_factory=list)

    def __post_init__(self):
        r = self.rank
        self.us = [
            random_feasible_basis(x.shape[0], r, rng_for(self.seed, Stream.CLIENT_INIT, p))
            for p, x in enumerate(self.xs)
        ]
        self.v_prev = [None] * len(self.xs)
        self.grad_prev = [None] * len(self.xs)
        n = self.xs[0].shape[1]
        self.v_bar = np.abs(rng_for(self.seed, Stream.SERVER_INIT).standard_normal((r, n)))
        self.v = prox_l21_nonneg(self.v_bar, self.params.effective_lr * self.params.mu)

    rank = 6

    def round(self):
        outs, diags = [], []
        for p, x in enumerate(self.xs):
            out = local_round(x, self.us[p], self.v_bar, self.params, self.v_prev[p], self.grad_prev[p])
            diags.append(client_diagnostics(x, self.us[p], out.u, out.v))
            self.us[p], self.v_prev[p], self.grad_prev[p] = out.u, out.v, out.grad_avg
            outs.append(out)
        v_bar_next, v_next = server_step(self.v, [o.v_hat for o in outs], self.params)
        r_v = residual_v(v_bar_next, v_next, np.mean([d.grad for d in diags], 0), self.params.effective_lr)
        r_u = float(np.mean([d.basis_residual for d in diags]))
        objective = float(np.mean([d.loss for d in diags])) + regulariser(self.v, self.params.mu)
        self.history.append({"residual": r_v + r_u, "objective": objective})
        self.v, self.v_bar = v_next, v_bar_next
        return outs


def synthetic_views(m=5, h=0.0, seed=0, **kw):
    spec = SyntheticSpec(heterogeneity=h, seed=seed, **kw)
    return [make_synthetic_view(spec, p) for p in range(m)]
