"""The array-module dispatch of the training loop: one code path, the compute chosen once.

The model, the loss, Adam and the Ops never branch on the device.  Where they call a kernel
they call it through ``ops.compute`` (an attribute lookup), which is chosen once when the
Ops are made:

`HOST` (`HostCompute`)
    The CPU path: the very functions the loop called before (Numba kernels, the row-chunked
    GEMM, SciPy for CSR features), so CPU results and speed are unchanged.
`ArrayCompute(backend)`
    The device path: array-module code over ``backend.xp`` (NumPy in the tests, CuPy on a
    GPU) for the element-wise and row-wise work (ReLU's gradient, the counter-based dropout
    hash, softmax cross-entropy, Adam), and the backend's library calls for the products
    (``spmm``/``gemm``: cuSPARSE and cuBLAS on a GPU) and for ``exp``/``log``.  Host arrays
    the loop hands in (labels, masks, row ids) are copied to the device once and kept; the
    only copies to the host inside an epoch are the scalars the loop reports (the loss
    sums of ``xent``, the weight-decay sums of squares).

The backend is duck-typed (`gcntrain.device.backend`): this module imports no device code.
LayerNorm (``--norm layer``, `gcntrain.model.norm` over ``xp``) and label propagation
(``--label-prop``: the draw by `ArrayCompute.label_draw`, the embedding on device arrays)
run on the device too; a checkpoint copies the state to the host once (`to_host`) and a
resume loads it back into the device arrays (`load_into`).
"""

from __future__ import annotations

import numpy as np

from gcntrain.kernels import dense
from gcntrain.kernels.dropout import keep_threshold
from gcntrain.model.functional import (
    dropout_backward,
    dropout_forward,
    relu_backward,
    relu_inplace,
)
from gcntrain.model.loss import local_xent
from gcntrain.model.optim import adam_step_size, adam_update

_MASK64 = (1 << 64) - 1
_GAMMA = 0x9E3779B97F4A7C15
_M1 = 0xBF58476D1CE4E5B9
_M2 = 0x94D049BB133111EB


def _identity(a):
    return a


def _assign(dst, src) -> None:
    dst[...] = src


def _host_sum_sq(a) -> float:
    return float(np.sum(np.square(a, dtype=np.float64)))


class HostCompute:
    """The CPU path: today's functions, bound as static methods (no per-call dispatch)."""

    device = False
    xp = np
    #: features, parameters and results stay where they are
    features = staticmethod(_identity)
    param = staticmethod(_identity)
    to_host = staticmethod(_identity)
    resident = staticmethod(_identity)
    load_into = staticmethod(_assign)
    sum_sq = staticmethod(_host_sum_sq)
    relu = staticmethod(relu_inplace)
    relu_backward = staticmethod(relu_backward)
    dropout_forward = staticmethod(dropout_forward)
    dropout_backward = staticmethod(dropout_backward)
    matmul = staticmethod(dense.matmul)
    matmul_tn = staticmethod(dense.matmul_tn)
    local_xent = staticmethod(local_xent)
    adam_update = staticmethod(adam_update)


#: the one host compute every Ops starts with
HOST = HostCompute()


def _mix_int(x: int) -> int:
    """SplitMix64's output function of ``x + GAMMA`` on a Python int (mod 2**64)."""
    z = (x + _GAMMA) & _MASK64
    z = ((z ^ (z >> 30)) * _M1) & _MASK64
    z = ((z ^ (z >> 27)) * _M2) & _MASK64
    return z ^ (z >> 31)


class ArrayCompute:
    """The device path over a backend (module docstring).

    Parameters
    ----------
    backend : a device backend (`gcntrain.device.emulated.EmulatedBackend`,
        `gcntrain.device.cupy_backend.CupyBackend`).
    """

    device = True

    def __init__(self, backend):
        self.backend = backend
        self.xp = backend.xp
        #: wait for the device's queued work (the timers call it around what they time)
        self.synchronize = backend.synchronize
        xp = self.xp
        self._u = xp.uint64
        self._c30, self._c27, self._c31 = (xp.uint64(s) for s in (30, 27, 31))
        self._g, self._m1, self._m2 = (xp.uint64(c) for c in (_GAMMA, _M1, _M2))
        #: host array -> (the host array, its device copy), by identity, copied once
        self._resident: dict[int, tuple] = {}

    # -- placement ------------------------------------------------------------------------
    def resident(self, a):
        """The device copy of the host array `a` (copied the first time only)."""
        if self.backend.is_device(a):
            return a
        hit = self._resident.get(id(a))
        if hit is None or hit[0] is not a:
            dev = self.backend.to_device(np.ascontiguousarray(a))
            hit = self._resident[id(a)] = (a, dev)
        return hit[1]

    def features(self, X):
        """The prepared features on the device: a resident CSR matrix or a dense array."""
        if hasattr(X, "tocsr"):
            X = X.tocsr()
            return self.backend.csr(X.indptr, X.indices, X.data, X.shape)
        return self.backend.to_device(np.ascontiguousarray(X))

    def param(self, full):
        """A parameter initialised on the host, copied to the device once."""
        return self.backend.to_device(np.ascontiguousarray(full))

    def to_host(self, a):
        """A host copy of a device array (counted by the emulated backend)."""
        return self.backend.fetch(a) if self.backend.is_device(a) else a

    def load_into(self, dst, src) -> None:
        """Copy the host array `src` into the device array `dst` in place (one copy; same
        shape and dtype: a checkpoint's state on resume)."""
        self.backend.to_device(np.ascontiguousarray(src), out=dst)

    def sum_sq(self, a) -> float:
        """``sum(a ** 2)`` in float64: one scalar to the host."""
        xp = self.xp
        return float(self.backend.fetch(xp.sum(xp.square(a, dtype=xp.float64))))

    # -- element-wise ---------------------------------------------------------------------
    def relu(self, Z):
        """``Z = max(Z, 0)`` in place; returns Z (the host's `relu_inplace`)."""
        return self.xp.maximum(Z, Z.dtype.type(0), out=Z)

    def relu_backward(self, dH, Z, out=None):
        """dH where Z > 0, else 0 (a new array: `out` is for the host's signature; the
        device's memory pool reuses the block an epoch frees)."""
        return self.xp.where(Z > 0, dH, dH.dtype.type(0))

    def _hash(self, rows, cols, seed: int, stream: int):
        """The 64-bit counter hash of (seed, stream, rows, cols) (`gcntrain.kernels.dropout`);
        `rows` and `cols` broadcast, uint64 device arrays."""
        key = self._u(_mix_int(_mix_int(int(seed) & _MASK64) ^ (int(stream) & _MASK64)))
        return self._mix(self._mix(key ^ rows) + cols * self._g)

    def _mix(self, x):
        z = x + self._g
        z = (z ^ (z >> self._c30)) * self._m1
        z = (z ^ (z >> self._c27)) * self._m2
        return z ^ (z >> self._c31)

    def dropout_forward(self, H, rows, seed: int, stream: int, p: float, col0: int = 0, out=None):
        """Inverted dropout with the CPU path's mask (same hash, same scale); a new array
        (`out`, the host's workspace buffer, is not used on the device: see
        `gcntrain.model.workspace`)."""
        if p <= 0.0:
            return H
        xp = self.xp
        thr = self._u(int(keep_threshold(p)))
        grows = self.resident(rows).astype(xp.uint64)
        if hasattr(H, "with_data"):  # resident CSR features: the stored entries only
            scale = H.dtype.type(1.0 / (1.0 - p))
            cols = H.indices.astype(xp.uint64) + self._u(col0)
            keep = self._hash(grows[H.entry_rows], cols, seed, stream) >= thr
            return H.with_data(xp.where(keep, H.data * scale, H.dtype.type(0)))
        scale = H.dtype.type(1.0 / (1.0 - p))
        cols = xp.arange(col0, col0 + H.shape[1], dtype=xp.uint64)
        keep = self._hash(grows[:, None], cols[None, :], seed, stream) >= thr
        return xp.where(keep, H * scale, H.dtype.type(0))

    def dropout_backward(self, dH, rows, seed: int, stream: int, p: float, col0: int = 0, out=None):
        """The same mask and scale applied to the gradient (a new array, as the forward)."""
        return self.dropout_forward(dH, rows, seed, stream, p, col0)

    def label_draw(self, rows, train, rate: float, seed: int, stream: int):
        """`gcntrain.model.trainer.label_draw` on the device: the `train` rows (a host bool
        mask, copied once) that the counter hash of (seed, stream, global row, column 0)
        does not keep at `rate`, as a device bool mask (nothing crosses per epoch)."""
        thr = self._u(int(keep_threshold(rate)))
        grows = self.resident(rows).astype(self.xp.uint64)
        keep = self._hash(grows, self._u(0), seed, stream) >= thr
        return self.resident(train) & ~keep

    # -- products -------------------------------------------------------------------------
    def matmul(self, A, B):
        return self.backend.gemm(A, B)

    def matmul_tn(self, A, B):
        return self.backend.gemm_tn(A, B)

    # -- rows -----------------------------------------------------------------------------
    def gather_rows(self, X, idx):
        """The rows `idx` (a device index array) of `X`, in that order (a new array)."""
        return X[idx]

    def scatter_add_rows(self, src, idx, out) -> None:
        """``out[idx[k]] += src[k]`` for every k, in place: in order of k as the Numba kernel
        (`gcntrain.kernels.rows.scatter_add_rows`) on the emulation; CuPy's ``add.at``
        adds repeated rows by atomics, in no fixed order."""
        self.xp.add.at(out, idx, src)

    def scatter_rows(self, src, idx, out) -> None:
        """``out[idx] = src`` in place (`idx` without repeats)."""
        out[idx] = src

    # -- loss -----------------------------------------------------------------------------
    def local_xent(self, logits, labels, masks, grad_index, grad_divisor):
        """`gcntrain.model.loss.local_xent` on the device, operation for operation as its
        kernel (`gcntrain.kernels.softmax.softmax_xent_masked`): the row maximum (first
        one for the hit), ``exp`` sums in column order in float64, the gradient rounded
        to the logits' dtype and divided there; without a gradient, float32 logits take
        ``exp`` in float32 as `softmax_xent_eval32` does.  Returns the sums on the host
        (one copy: the scalars the loop reports) and the gradient on the device."""
        xp, be = self.xp, self.backend
        n, c = logits.shape
        dt = logits.dtype.type
        lab = self.resident(np.asarray(labels, dtype=np.int64))
        ms = [self._mask(m, lab) for m in masks]
        active = xp.zeros(n, dtype=bool)
        for m in ms:
            active |= m
        need = grad_index is not None
        grad = None
        loss_rows = xp.zeros(n, dtype=xp.float64)
        hits = xp.zeros(n, dtype=bool)
        if n and c:
            arg = xp.argmax(logits, axis=1)
            ar = xp.arange(n)
            m64 = logits[ar, arg].astype(xp.float64)
            safe = xp.where(lab >= 0, lab, 0)
            if not need and logits.dtype == np.float32:  # the evaluation's float32 exp
                m32 = logits[ar, arg]
                e = [be.exp(logits[:, j] - m32).astype(xp.float64) for j in range(c)]
            else:
                e = [be.exp(logits[:, j].astype(xp.float64) - m64) for j in range(c)]
            s = e[0]
            for j in range(1, c):
                s = s + e[j]
            loss = be.log(s) - (logits[ar, safe].astype(xp.float64) - m64)
            loss_rows = xp.where(active, loss, 0.0)
            hits = active & (arg == lab)
            if need:
                rows = ms[grad_index]
                div = dt(float(max(grad_divisor, 1)))
                cols = []
                for j in range(c):
                    q = e[j] / s
                    q = xp.where(lab == j, q - 1.0, q)
                    cols.append(xp.where(rows, q.astype(logits.dtype) / div, dt(0)))
                grad = xp.stack(cols, axis=1)
        elif need:
            grad = xp.zeros((n, c), dtype=logits.dtype)
        sums = []
        for m in ms:
            sums += [xp.sum(loss_rows[m]), xp.sum(hits & m, dtype=xp.float64)]
        return be.fetch(xp.stack(sums)), grad

    def _mask(self, m, lab):
        if m is None:
            return self.xp.zeros(lab.shape[0], dtype=bool)
        if self.backend.is_device(m):  # made on the device (label propagation's loss mask)
            return m.astype(bool, copy=False) & (lab >= 0)
        return self.resident(np.asarray(m, dtype=bool)) & (lab >= 0)

    # -- optimiser ------------------------------------------------------------------------
    def adam_update(
        self, w, g, m, v, t, lr, beta1=0.9, beta2=0.999, eps=1e-8, decoupled_decay=0.0
    ) -> None:
        """`gcntrain.model.optim.adam_update` in array form, in place, every element through
        the kernel's operations in its order (so the emulated run equals the CPU run)."""
        dt = w.dtype.type
        lr_t = dt(adam_step_size(lr, t, beta1, beta2))
        mn = m * dt(beta1)
        mn += dt(1.0 - beta1) * g
        vn = v * dt(beta2)
        vn += dt(1.0 - beta2) * (g * g)
        m[...] = mn
        v[...] = vn
        decay = dt(lr * decoupled_decay)
        if decay:
            w -= decay * w
        w[...] = w - lr_t * mn / (self.xp.sqrt(vn) + dt(eps))


def compute_for(backend) -> HostCompute | ArrayCompute:
    """The compute of a run on `backend`: `HOST` for None or the host backend, else an
    `ArrayCompute` over it."""
    if backend is None or getattr(backend, "name", "cpu") == "cpu":
        return HOST
    return ArrayCompute(backend)
