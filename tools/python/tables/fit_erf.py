# SPDX-License-Identifier: Apache-2.0
"""fit_erf.py: the rational erf approximation of kernels/elementwise/elementwise_hwy.cc (GELU).

    /usr/bin/python3 tools/python/tables/fit_erf.py

Fits erf(z) ~ z P(z^2) / Q(z^2), Q(0) = 1, P and Q of degree 5, on 0 <= z <= 3.92 (erf is odd,
and beyond 3.92 it rounds to 1 in float32), by iteratively reweighted least squares on the
linearised residual (Lawson weights, divided by Q to approximate the true error). Prints the
coefficients as float32 and the largest absolute error in exact arithmetic and with the kernel's
float32 Horner evaluation.
"""

from math import erf

import numpy as np

Z_MAX = 3.92
DEG_P, DEG_Q = 5, 5


def fit(z, y, iters=30):
    t = z * z
    w = np.ones_like(z)
    q = np.zeros(DEG_Q)
    for _ in range(iters):
        # y Q(t) - z P(t) = 0 with Q(t) = 1 + q1 t + ...: linear in p0..p5, q1..q5.
        A = np.hstack([-(z[:, None] * t[:, None] ** np.arange(DEG_P + 1)[None, :]),
                       y[:, None] * t[:, None] ** np.arange(1, DEG_Q + 1)[None, :]])
        Q = 1 + sum(q[i] * t ** (i + 1) for i in range(DEG_Q))
        W = w / np.abs(Q)
        sol, *_ = np.linalg.lstsq(A * W[:, None], -y * W, rcond=None)
        p, q = sol[:DEG_P + 1], sol[DEG_P + 1:]
        err = z * np.polyval(p[::-1], t) / (1 + t * np.polyval(q[::-1], t)) - y
        w = w * np.sqrt(np.abs(err) + 1e-30)
        w /= w.max()
    return p, q, np.abs(err).max()


def eval_f32(z, p, q):
    z = z.astype(np.float32)
    t = z * z
    P = np.full_like(t, np.float32(p[-1]))
    for c in p[-2::-1]:
        P = P * t + np.float32(c)
    Q = np.full_like(t, np.float32(q[-1]))
    for c in q[-2::-1]:
        Q = Q * t + np.float32(c)
    Q = Q * t + np.float32(1)
    return z * P / Q


def main():
    # Dense near both ends (Chebyshev-like) and uniform in between.
    z = np.unique(np.concatenate([np.linspace(0, Z_MAX, 20000),
                                  Z_MAX * np.cos(np.linspace(0, np.pi / 2, 20000))]))
    y = np.array([erf(v) for v in z])
    p, q, err = fit(z, y)
    err32 = np.abs(eval_f32(z, p, q).astype(np.float64) - y).max()
    print("P:", ", ".join("%.9gf" % np.float32(c) for c in p))
    print("Q (after the leading 1):", ", ".join("%.9gf" % np.float32(c) for c in q))
    print("max |error|: %.2e exact, %.2e in float32" % (err, err32))


if __name__ == "__main__":
    main()
