"""Explicit SIMD registers for jitted kernels: a vector of `LANES` values as one Numba value.

Numba compiles with LLVM's loop vectoriser only (its SLP vectoriser is off), so a kernel that
keeps, say, 16 running sums of a row in 16 scalar locals gets 16 scalar adds per step, and a
kernel that keeps them in an array gets a load and a store of every sum per step.  A value of
`VecType` is an LLVM vector (``<16 x float>``, ``<16 x double>``): a local of this type lives
in vector registers across loop iterations (a phi node), and `vec_madd` is one vector
multiply and one vector add (LLVM splits the vector to the machine's width: one AVX-512
register of float32, two AVX2 registers, four NEON registers; SVE machines get fixed-width
code of the same meaning).

Arithmetic is exactly the scalar code's: ``acc + v * x`` rounds the product, then the sum,
lane by lane (no fused multiply-add, no reassociation: no fast-math flags), so a kernel
using these values gives the same bits as its scalar loop.

Intrinsics (all over C-contiguous 2-D arrays; no bounds checks, like the kernels):

* ``vec_zero(arr)``: a vector of +0.0 of ``arr``'s dtype;
* ``vec_load(arr, r, j)``: ``arr[r, j : j + LANES]``;
* ``vec_madd(acc, v, arr, r, j)``: ``acc + v * arr[r, j : j + LANES]``;
* ``vec_store(arr, r, j, acc)``: ``arr[r, j : j + LANES] = acc``.
"""

from __future__ import annotations

from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic, models, register_model

#: values per vector (16 float32: one 64-byte cache line, one AVX-512 register)
LANES = 16


class VecType(types.Type):
    """Numba type of `LANES` values of one float dtype held as an LLVM vector."""

    def __init__(self, dtype):
        self.dtype = dtype
        super().__init__(name=f"vec{LANES}({dtype})")


@register_model(VecType)
class _VecModel(models.PrimitiveModel):
    def __init__(self, dmm, fe_type):
        elem = dmm.lookup(fe_type.dtype).get_value_type()
        super().__init__(dmm, fe_type, ir.VectorType(elem, LANES))


def _float_matrix(arr) -> bool:
    return (
        isinstance(arr, types.Array)
        and arr.ndim == 2
        and arr.layout == "C"
        and isinstance(arr.dtype, types.Float)
    )


def _vec_pointer(context, builder, aty, ary_val, r, rty, j, jty):
    """Pointer to ``arr[r, j]`` cast to a pointer to a vector of `LANES` elements."""
    ary = context.make_array(aty)(context, builder, ary_val)
    ri = context.cast(builder, r, rty, types.intp)
    ji = context.cast(builder, j, jty, types.intp)
    ptr = cgutils.get_item_pointer(context, builder, aty, ary, [ri, ji], wraparound=False)
    vty = ir.VectorType(context.get_value_type(aty.dtype), LANES)
    return builder.bitcast(ptr, vty.as_pointer())


def _align(context, aty) -> int:
    """Alignment promised for a vector access: one element's (rows need not be aligned)."""
    return context.get_abi_sizeof(context.get_value_type(aty.dtype))


@intrinsic
def vec_zero(typingctx, arr):
    """A vector of +0.0 in ``arr``'s dtype."""
    if not _float_matrix(arr):
        return None

    def codegen(context, builder, signature, args):
        elem = context.get_value_type(signature.args[0].dtype)
        return ir.Constant(ir.VectorType(elem, LANES), None)  # zeroinitializer: +0.0

    return VecType(arr.dtype)(arr), codegen


@intrinsic
def vec_load(typingctx, arr, r, j):
    """``arr[r, j : j + LANES]`` as a vector."""
    if not (_float_matrix(arr) and isinstance(r, types.Integer) and isinstance(j, types.Integer)):
        return None

    def codegen(context, builder, signature, args):
        aty, rty, jty = signature.args
        vp = _vec_pointer(context, builder, aty, args[0], args[1], rty, args[2], jty)
        return builder.load(vp, align=_align(context, aty))

    return VecType(arr.dtype)(arr, r, j), codegen


@intrinsic
def vec_madd(typingctx, acc, v, arr, r, j):
    """``acc + v * arr[r, j : j + LANES]``: a rounded product, then a rounded sum, per lane."""
    ok = (
        isinstance(acc, VecType)
        and _float_matrix(arr)
        and acc.dtype == arr.dtype
        and v == arr.dtype
        and isinstance(r, types.Integer)
        and isinstance(j, types.Integer)
    )
    if not ok:
        return None

    def codegen(context, builder, signature, args):
        _, vty, aty, rty, jty = signature.args
        vp = _vec_pointer(context, builder, aty, args[2], args[3], rty, args[4], jty)
        x = builder.load(vp, align=_align(context, aty))
        vec = x.type
        splat = builder.insert_element(ir.Constant(vec, ir.Undefined), args[1], ir.IntType(32)(0))
        splat = builder.shuffle_vector(
            splat,
            ir.Constant(vec, ir.Undefined),
            ir.Constant(ir.VectorType(ir.IntType(32), LANES), None),
        )
        return builder.fadd(args[0], builder.fmul(splat, x))

    return acc(acc, v, arr, r, j), codegen


@intrinsic
def vec_store(typingctx, arr, r, j, acc):
    """``arr[r, j : j + LANES] = acc``."""
    ok = (
        _float_matrix(arr)
        and isinstance(acc, VecType)
        and acc.dtype == arr.dtype
        and isinstance(r, types.Integer)
        and isinstance(j, types.Integer)
    )
    if not ok:
        return None

    def codegen(context, builder, signature, args):
        aty, rty, jty, _ = signature.args
        vp = _vec_pointer(context, builder, aty, args[0], args[1], rty, args[2], jty)
        builder.store(args[3], vp, align=_align(context, aty))
        return context.get_dummy_value()

    return types.void(arr, r, j, acc), codegen
