"""Python entry points generated as LLVM IR: ``PyObject *f(self, args, nargs)`` (METH_FASTCALL)
that take the Python objects, acquire each argument's buffer ONCE with the buffer protocol,
check it, call the kernel and release every buffer at the one exit.

Why not ctypes or cffi: a ctypes call costs 0.5-1 us and each buffer's address another
0.8-6 us, 20x the kernel at 16 bytes.  And a buffer measured in one acquisition and used in a
later one can be resized in between by another thread; holding one `Py_buffer` for the whole
call makes such a resize fail with BufferError in that thread, as with `cryptography`.

``self`` is the key context's holder (a ctypes array): the entry acquires it too, and counts
itself in the context's in-flight word while it runs, so `AesGcm.close` can wait for calls that
released the GIL before it wipes the keys.

An entry returns its result (bytes, or the int 0), NULL with an exception set (out of memory),
or an int error code: a kernel's return code (negative, `vgkernels.abi.RETURN_CODES`) or one of
the E_* codes below.  On a code the caller diagnoses the arguments in Python, so every message
is written once, in `vgkernels.api`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from llvmlite import ir

from .. import abi
from ..abi import MAX_AAD, MAX_PLAINTEXT
from ..backends import Backend
from ..buffers import _PLAIN
from ..ir.core import i1, i8, i32, i64, ptr, void
from . import capi

# Codes of the entries' own checks: negative like the kernels' (success is >= 0: bytes, 0, or
# the number of bytes written), below them so the two never meet.
E_ARGS = -90  # wrong number of arguments, or the holder is not a writable buffer
E_BUFFER = -100  # - argument index: not a usable byte buffer (type, format, contiguity, writable)
E_SHORT = -200  # decrypt: data shorter than the tag
E_TAG_LENGTH = -201
E_OUT_SMALL = -202
E_OVERLAP = -203
GIL_RELEASE_AT = 4096  # bytes from which a kernel runs with the GIL released

# Format characters of plain data (struct module syntax); 'O' (objects), 'P' (pointers) and
# structures are refused: their bytes are addresses, not data.
_PLAIN_FORMAT = {ord(c) for c in _PLAIN}


def _c(x: int) -> ir.Constant:
    return ir.Constant(i64, x)


def _prelude(module: ir.Module) -> None:
    """Module-level helpers: the empty buffer's address and the format check."""
    empty = ir.GlobalVariable(module, ir.ArrayType(i8, 64), name="vg.py.empty")
    empty.initializer = ir.Constant(ir.ArrayType(i8, 64), None)
    empty.linkage = "internal"
    empty.align = 64
    empty.type = ptr  # llvmlite prints typed pointers; LLVM 22 reads opaque ones
    table = ir.GlobalVariable(module, ir.ArrayType(i8, 256), name="vg.py.plain")
    table.initializer = ir.Constant(ir.ArrayType(i8, 256),
                                    [int(c in _PLAIN_FORMAT) for c in range(256)])
    table.linkage = "internal"
    table.global_constant = True
    table.type = ptr
    # i1 vg.py.plain_format(char *fmt): NULL or only plain-data characters
    fn = ir.Function(module, ir.FunctionType(i1, [ptr]), name="vg.py.plain_format")
    fn.linkage = "internal"
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    (fmt,) = fn.args
    loop, body, yes, no = (fn.append_basic_block(n) for n in ("loop", "body", "yes", "no"))
    b.cbranch(b.icmp_unsigned("==", fmt, ir.Constant(ptr, None)), yes, loop)
    b.position_at_end(loop)
    i = b.phi(i64)
    i.add_incoming(_c(0), fn.blocks[0])
    ch = b.load(b.gep(fmt, [i], source_etype=i8), typ=i8)
    b.cbranch(b.icmp_unsigned("==", ch, ir.Constant(i8, 0)), yes, body)
    b.position_at_end(body)
    ok = b.load(b.gep(table, [_c(0), b.zext(ch, i64)], source_etype=table.value_type), typ=i8)
    i.add_incoming(b.add(i, _c(1)), body)
    b.cbranch(b.icmp_unsigned("!=", ok, ir.Constant(i8, 0)), loop, no)
    b.position_at_end(yes)
    b.ret(ir.Constant(i1, 1))
    b.position_at_end(no)
    b.ret(ir.Constant(i1, 0))


class Buffer:
    """An acquired argument: address (a valid one even when empty) and length."""

    def __init__(self, p: ir.Value, n: ir.Value):
        self.p, self.n = p, n


class PyEntry:
    """One METH_FASTCALL function under construction.  Every path leaves through `exit`,
    which releases every buffer acquired so far and the in-flight count."""

    def __init__(self, module: ir.Module, name: str, nargs: int, slots: int):
        self.module = module
        self.fn = ir.Function(module, ir.FunctionType(ptr, [ptr, ptr, i64]), name=name)
        self.self_obj, self.args, self.nargs = self.fn.args
        self.b = ir.IRBuilder(self.fn.append_basic_block("entry"))
        b = self.b
        self.views = b.alloca(ir.ArrayType(i8, capi.PY_BUFFER_SIZE * slots))
        self.views.align = 8
        self.views.type = ptr
        self.slots = slots
        for s in range(slots):
            b.store(ir.Constant(ptr, None), self._slot_field(s, capi.BUF_OBJ))
        # pieces: a heap array of views (released at exit) and how many are held
        self.dyn = b.alloca(ptr)
        self.dyn.type = ptr
        self.dyn_n = b.alloca(i64)
        self.dyn_n.type = ptr
        b.store(ir.Constant(ptr, None), self.dyn)
        b.store(_c(0), self.dyn_n)
        self.ctx_slot = b.alloca(ptr)
        self.ctx_slot.type = ptr
        b.store(ir.Constant(ptr, None), self.ctx_slot)
        self.exit = self.fn.append_basic_block("exit")
        self.incoming: list[tuple[ir.Value, ir.Block]] = []
        self.guard(b.icmp_unsigned("!=", self.nargs, _c(nargs)), E_ARGS)
        self.ctx = self._context()

    # -- plumbing ------------------------------------------------------------------------------
    def call(self, name: str, args: Sequence[ir.Value]) -> ir.Value:
        return self.b.call(capi.declare(self.module, name), list(args))

    def _slot_field(self, s: int, off: int) -> ir.Value:
        return self.b.gep(self.views, [_c(capi.PY_BUFFER_SIZE * s + off)], source_etype=i8)

    def arg(self, i: int) -> ir.Value:
        return self.b.load(self.b.gep(self.args, [_c(i)], source_etype=ptr), typ=ptr)

    def is_none(self, obj: ir.Value) -> ir.Value:
        return self.b.icmp_unsigned("==", obj, capi.none_object(self.module))

    def leave(self, value: ir.Value) -> None:
        self.incoming.append((value, self.b.block))
        self.b.branch(self.exit)

    def fail(self, code: int | ir.Value) -> None:
        c = _c(code) if isinstance(code, int) else self.b.sext(code, i64)
        self.leave(self.call("PyLong_FromLong", [c]))

    def guard(self, bad: ir.Value, code: int) -> None:
        b = self.b
        with b.if_then(bad, likely=False):
            self.fail(code)  # terminates the branch: if_then adds no jump to its join

    # -- buffers -------------------------------------------------------------------------------
    def _acquire_into(self, obj: ir.Value, view: ir.Value, writable: bool, code: int) -> Buffer:
        b = self.b
        flags = capi.PyBUF_C_CONTIGUOUS | capi.PyBUF_FORMAT | (
            capi.PyBUF_WRITABLE if writable else 0)
        rc = self.call("PyObject_GetBuffer", [obj, view, ir.Constant(i32, flags)])
        with b.if_then(b.icmp_signed("!=", rc, ir.Constant(i32, 0)), likely=False):
            b.store(ir.Constant(ptr, None), b.gep(view, [_c(capi.BUF_OBJ)], source_etype=i8))
            self.call("PyErr_Clear", [])
            self.fail(code)
        fmt = b.load(b.gep(view, [_c(capi.BUF_FORMAT)], source_etype=i8), typ=ptr)
        plain = b.call(self.module.globals["vg.py.plain_format"], [fmt])
        self.guard(b.not_(plain), code)
        p = b.load(b.gep(view, [_c(capi.BUF_BUF)], source_etype=i8), typ=ptr)
        n = b.load(b.gep(view, [_c(capi.BUF_LEN)], source_etype=i8), typ=i64)
        empty = self.module.globals["vg.py.empty"]
        return Buffer(b.select(b.icmp_unsigned("==", n, _c(0)), empty, p), n)

    def acquire(self, obj: ir.Value, slot: int, writable: bool, code: int) -> Buffer:
        return self._acquire_into(obj, self._slot_field(slot, 0), writable, code)

    def optional(self, obj: ir.Value, slot: int, code: int) -> Buffer:
        """None is the empty buffer (associated_data=None)."""
        b = self.b
        none_bb, some_bb, join = (self.fn.append_basic_block(n)
                                  for n in ("none", "some", "opt.join"))
        b.cbranch(self.is_none(obj), none_bb, some_bb)
        b.position_at_end(some_bb)
        got = self.acquire(obj, slot, False, code)
        some_end = b.block
        b.branch(join)
        b.position_at_end(none_bb)
        b.branch(join)
        b.position_at_end(join)
        p = b.phi(ptr)
        p.add_incoming(got.p, some_end)
        p.add_incoming(self.module.globals["vg.py.empty"], none_bb)
        n = b.phi(i64)
        n.add_incoming(got.n, some_end)
        n.add_incoming(_c(0), none_bb)
        return Buffer(p, n)

    def _context(self) -> ir.Value:
        """The key context, 64-byte aligned inside ``self``; counted in flight until exit."""
        b = self.b
        buf = self.acquire(self.self_obj, 0, True, E_ARGS)
        addr = b.and_(b.add(b.ptrtoint(buf.p, i64), _c(abi.CTX_ALIGN - 1)), _c(-abi.CTX_ALIGN))
        ctx = b.inttoptr(addr, ptr)
        inflight = b.gep(ctx, [_c(abi.CTX_INFLIGHT)], source_etype=i8)
        b.store(b.add(b.load(inflight, typ=i32), ir.Constant(i32, 1)), inflight)  # GIL held
        b.store(ctx, self.ctx_slot)
        # the kernels check the context too; checked here first so that no entry copies or
        # allocates anything for a closed key
        magic = b.load(b.gep(ctx, [_c(abi.CTX_MAGIC)], source_etype=i8), typ=i32)
        self.guard(b.icmp_unsigned("!=", magic, ir.Constant(i32, abi.CTX_MAGIC_VALUE)),
                   abi.RC_CONTEXT)
        return ctx

    def overlap(self, a: Buffer, an: ir.Value, c: Buffer) -> ir.Value:
        """[a.p, a.p + an) and c share a byte."""
        b = self.b
        pa, pc = b.ptrtoint(a.p, i64), b.ptrtoint(c.p, i64)
        both = b.and_(b.icmp_unsigned("!=", an, _c(0)), b.icmp_unsigned("!=", c.n, _c(0)))
        return b.and_(both, b.and_(b.icmp_unsigned("<", pa, b.add(pc, c.n)),
                                   b.icmp_unsigned("<", pc, b.add(pa, an))))

    def new_bytes(self, n: ir.Value) -> tuple[ir.Value, ir.Value]:
        """(bytes object, its data) of n bytes; out of memory leaves with the exception."""
        b = self.b
        obj = self.call("PyBytes_FromStringAndSize", [ir.Constant(ptr, None), n])
        with b.if_then(b.icmp_unsigned("==", obj, ir.Constant(ptr, None)), likely=False):
            self.leave(obj)
        return obj, self.call("PyBytes_AsString", [obj])

    def kernel(self, backend_prefix: str, op: str, args: Sequence[ir.Value],
               nbytes: ir.Value) -> ir.Value:
        """Call ``<prefix>_<op>``; from GIL_RELEASE_AT bytes with the GIL released."""
        b = self.b
        name = f"{backend_prefix}_{op}"
        fn = self.module.globals.get(name)
        if fn is None:
            sig = abi.TWO_SLICE_SIGNATURE if op == "seal_two_slice" else abi.SIGNATURES[op]
            fn = ir.Function(self.module, ir.FunctionType(
                i32, [ptr if t is abi.P else i64 for t in sig[1]]), name=name)
        big = b.icmp_unsigned(">=", nbytes, _c(GIL_RELEASE_AT))
        with b.if_else(big) as (released, held):
            with released:
                save = self.call("PyEval_SaveThread", [])
                rc_r = b.call(fn, list(args))
                self.call("PyEval_RestoreThread", [save])
                bb_r = b.block
            with held:
                rc_h = b.call(fn, list(args))
                bb_h = b.block
        rc = b.phi(i32)
        rc.add_incoming(rc_r, bb_r)
        rc.add_incoming(rc_h, bb_h)
        return rc

    def check_rc(self, rc: ir.Value, owned: ir.Value | None = None) -> None:
        """A kernel's error code leaves (dropping the result object made for it)."""
        b = self.b
        with b.if_then(b.icmp_signed("!=", rc, ir.Constant(i32, 0)), likely=False):
            if owned is not None:
                self.call("Py_DecRef", [owned])
            self.fail(rc)

    def finish(self) -> None:
        b = self.b
        b.position_at_end(self.exit)
        result = b.phi(ptr)
        for v, bb in self.incoming:
            result.add_incoming(v, bb)
        for s in range(self.slots):
            self.call("PyBuffer_Release", [self._slot_field(s, 0)])
        self._release_dynamic()
        ctx = b.load(self.ctx_slot, typ=ptr)
        with b.if_then(b.icmp_unsigned("!=", ctx, ir.Constant(ptr, None))):
            inflight = b.gep(ctx, [_c(abi.CTX_INFLIGHT)], source_etype=i8)
            b.store(b.sub(b.load(inflight, typ=i32), ir.Constant(i32, 1)), inflight)
        b.ret(result)

    # -- loops and pieces ----------------------------------------------------------------------
    def for_range(self, count: ir.Value, body: Callable[[ir.Value], None],
                  name: str = "loop") -> None:
        """for (i = 0; i < count; i++) body(i), count signed (in the spirit of numba's
        cgutils.for_range)."""
        b = self.b
        head, loop, done = (self.fn.append_basic_block(f"{name}.{x}")
                            for x in ("head", "body", "done"))
        pre = b.block
        b.branch(head)
        b.position_at_end(head)
        i = b.phi(i64)
        i.add_incoming(_c(0), pre)
        b.cbranch(b.icmp_signed("<", i, count), loop, done)
        b.position_at_end(loop)
        body(i)
        i.add_incoming(b.add(i, _c(1)), b.block)
        b.branch(head)
        b.position_at_end(done)

    def each_piece(self, desc: ir.Value, count: ir.Value,
                   body: Callable[[ir.Value, ir.Value, ir.Value], None]) -> None:
        """for each struct vg_piece {p, n} of ``desc``: body(p, n, pos), pos = the bytes of the
        pieces before it (where its output starts)."""
        b = self.b
        pos = b.alloca(i64)  # bytes before piece i: where its output starts
        pos.type = ptr
        b.store(_c(0), pos)

        def step(i: ir.Value) -> None:
            d = b.gep(desc, [b.mul(i, _c(16))], source_etype=i8)
            n = b.load(b.gep(d, [_c(8)], source_etype=i8), typ=i64)
            at = b.load(pos, typ=i64)
            body(b.load(d, typ=ptr), n, at)
            b.store(b.add(at, n), pos)

        self.for_range(count, step, "piece")

    def pieces(self, tup: ir.Value, code: int,
               each: Callable[[ir.Value, Buffer, ir.Value], None]) -> tuple[ir.Value, ir.Value]:
        """Acquire every item of the tuple ``tup`` (held until exit) and fill an array of
        ``struct vg_piece`` for seal_gather; ``each(i, buffer, descriptor)`` emits per-piece
        code.  Returns (number of pieces, the descriptors).  One heap block holds the views
        and the descriptors; exit releases and frees it."""
        b = self.b
        count = self.call("PyTuple_Size", [tup])
        room = b.add(count, _c(1))
        mem = self.call("PyMem_Malloc", [b.mul(room, _c(capi.PY_BUFFER_SIZE + 16))])
        self.guard(b.icmp_unsigned("==", mem, ir.Constant(ptr, None)), E_ARGS)
        b.store(mem, self.dyn)
        desc = b.gep(mem, [b.mul(room, _c(capi.PY_BUFFER_SIZE))], source_etype=i8)

        def acquire(i: ir.Value) -> None:
            view = b.gep(mem, [b.mul(i, _c(capi.PY_BUFFER_SIZE))], source_etype=i8)
            # counted before it is acquired (an unfilled view has obj NULL: releasing it is a
            # no-op)
            b.store(ir.Constant(ptr, None), b.gep(view, [_c(capi.BUF_OBJ)], source_etype=i8))
            b.store(b.add(i, _c(1)), self.dyn_n)
            got = self._acquire_into(self.call("PyTuple_GetItem", [tup, i]), view, False, code)
            d = b.gep(desc, [b.mul(i, _c(16))], source_etype=i8)
            b.store(got.p, d)
            b.store(got.n, b.gep(d, [_c(8)], source_etype=i8))
            each(i, got, d)

        self.for_range(count, acquire, "acquire")
        return count, desc

    def _release_dynamic(self) -> None:
        b = self.b
        mem = b.load(self.dyn, typ=ptr)
        n = b.load(self.dyn_n, typ=i64)
        self.for_range(n, lambda i: self.call("PyBuffer_Release", [
            b.gep(mem, [b.mul(i, _c(capi.PY_BUFFER_SIZE))], source_etype=i8)]), "release")
        with b.if_then(b.icmp_unsigned("!=", mem, ir.Constant(ptr, None))):
            self.call("PyMem_Free", [mem])


# -- the entries --------------------------------------------------------------------------------

def _limits(e: PyEntry, nonce: Buffer, text: ir.Value, aad: Buffer) -> None:
    """An empty nonce and GCM's limits, before anything is allocated or copied (the kernels
    check them again)."""
    e.guard(e.b.icmp_unsigned("==", nonce.n, _c(0)), abi.RC_EMPTY_NONCE)
    e.guard(e.b.icmp_unsigned(">", text, _c(MAX_PLAINTEXT)), abi.RC_TEXT_TOO_LONG)
    e.guard(e.b.icmp_unsigned(">", aad.n, _c(MAX_AAD)), abi.RC_AAD_TOO_LONG)


def _encrypt(module: ir.Module, k: str) -> None:
    """encrypt(nonce, data, aad) -> ciphertext || tag"""
    e = PyEntry(module, f"{k}_py_encrypt", 3, 4)
    nonce = e.acquire(e.arg(0), 1, False, E_BUFFER - 0)
    data = e.acquire(e.arg(1), 2, False, E_BUFFER - 1)
    aad = e.optional(e.arg(2), 3, E_BUFFER - 2)
    _limits(e, nonce, data.n, aad)
    obj, out = e.new_bytes(e.b.add(data.n, _c(16)))
    rc = e.kernel(k, "seal_out", [e.ctx, nonce.p, nonce.n, aad.p, aad.n, data.p, out, data.n,
                                  e.b.gep(out, [data.n], source_etype=i8)], data.n)
    e.check_rc(rc, obj)
    e.leave(obj)
    e.finish()


def _decrypt(module: ir.Module, k: str) -> None:
    """decrypt(nonce, data, aad) -> plaintext (data is ciphertext || tag)"""
    e = PyEntry(module, f"{k}_py_decrypt", 3, 4)
    b = e.b
    nonce = e.acquire(e.arg(0), 1, False, E_BUFFER - 0)
    data = e.acquire(e.arg(1), 2, False, E_BUFFER - 1)
    aad = e.optional(e.arg(2), 3, E_BUFFER - 2)
    e.guard(b.icmp_unsigned("<", data.n, _c(16)), E_SHORT)
    n = b.sub(data.n, _c(16))
    _limits(e, nonce, n, aad)
    obj, out = e.new_bytes(n)
    rc = e.kernel(k, "open_out", [e.ctx, nonce.p, nonce.n, aad.p, aad.n, data.p, out, n,
                                  b.gep(data.p, [n], source_etype=i8), _c(16)], n)
    e.check_rc(rc, obj)
    e.leave(obj)
    e.finish()


def _in_place(module: ir.Module, k: str, seal: bool) -> None:
    """encrypt_in_place(nonce, buf, aad) -> tag; decrypt_in_place(nonce, buf, aad, tag) -> 0"""
    name = "encrypt_in_place" if seal else "decrypt_in_place"
    e = PyEntry(module, f"{k}_py_{name}", 3 if seal else 4, 5)
    b = e.b
    nonce = e.acquire(e.arg(0), 1, False, E_BUFFER - 0)
    buf = e.acquire(e.arg(1), 2, True, E_BUFFER - 1)
    aad = e.optional(e.arg(2), 3, E_BUFFER - 2)
    others = [nonce, aad]
    if not seal:
        tag = e.acquire(e.arg(3), 4, False, E_BUFFER - 3)
        e.guard(b.icmp_unsigned("!=", tag.n, _c(16)), E_TAG_LENGTH)
        others.append(tag)
    for o in others:
        e.guard(e.overlap(buf, buf.n, o), E_OVERLAP)
    _limits(e, nonce, buf.n, aad)
    if seal:
        obj, tp = e.new_bytes(_c(16))
        rc = e.kernel(k, "seal", [e.ctx, nonce.p, nonce.n, aad.p, aad.n, buf.p, buf.n, tp],
                      buf.n)
        e.check_rc(rc, obj)
        e.leave(obj)
    else:
        rc = e.kernel(k, "open", [e.ctx, nonce.p, nonce.n, aad.p, aad.n, buf.p, buf.n, tag.p,
                                  _c(16)], buf.n)
        e.check_rc(rc)
        e.fail(0)  # the int 0: done
    e.finish()


def _into(module: ir.Module, k: str, seal: bool) -> None:
    """encrypt_into(out, nonce, data, aad) -> tag; decrypt_into(out, nonce, data, aad, tag) -> 0.
    ``out`` may be larger than data; it may be exactly data (in place), never overlap it."""
    name = "encrypt_into" if seal else "decrypt_into"
    e = PyEntry(module, f"{k}_py_{name}", 4 if seal else 5, 6)
    b = e.b
    out = e.acquire(e.arg(0), 1, True, E_BUFFER - 0)
    nonce = e.acquire(e.arg(1), 2, False, E_BUFFER - 1)
    data = e.acquire(e.arg(2), 3, False, E_BUFFER - 2)
    aad = e.optional(e.arg(3), 4, E_BUFFER - 3)
    others = [nonce, aad]
    if not seal:
        tag = e.acquire(e.arg(4), 5, False, E_BUFFER - 4)
        e.guard(b.icmp_unsigned("!=", tag.n, _c(16)), E_TAG_LENGTH)
        others.append(tag)
    _limits(e, nonce, data.n, aad)
    e.guard(b.icmp_unsigned("<", out.n, data.n), E_OUT_SMALL)
    same = b.icmp_unsigned("==", out.p, data.p)
    e.guard(b.and_(b.not_(same), e.overlap(out, data.n, data)), E_OVERLAP)
    for o in others:
        e.guard(e.overlap(out, data.n, o), E_OVERLAP)
    if seal:
        obj, tp = e.new_bytes(_c(16))
        rc = e.kernel(k, "seal_out", [e.ctx, nonce.p, nonce.n, aad.p, aad.n, data.p, out.p,
                                      data.n, tp], data.n)
        e.check_rc(rc, obj)
        e.leave(obj)
    else:
        rc = e.kernel(k, "open_out", [e.ctx, nonce.p, nonce.n, aad.p, aad.n, data.p, out.p,
                                      data.n, tag.p, _c(16)], data.n)
        e.check_rc(rc)
        e.fail(0)
    e.finish()


def _pieces(module: ir.Module, k: str, two_slice: bool) -> None:
    """encrypt_pieces(out, nonce, pieces, aad, aligned_below, unaligned_below):
    out None -> ciphertext || tag (bytes); else the ciphertext goes into out -> tag.

    Texts shorter than the threshold (aligned: every piece but the last a whole number of
    blocks) are copied into the output and sealed there; others are gathered where they lie.
    A piece then at most one byte takes the two-slice entry first."""
    e = PyEntry(module, f"{k}_py_encrypt_pieces", 6, 4)
    count = _path_counter(module, e, k)
    out_obj = e.arg(0)
    nonce = e.acquire(e.arg(1), 1, False, E_BUFFER - 1)
    aad = e.optional(e.arg(3), 2, E_BUFFER - 3)
    text = _text_of_pieces(e, e.arg(2))
    _limits(e, nonce, text.total, aad)
    out = _pieces_output(e, out_obj, nonce, aad, text)
    if two_slice:
        _try_two_slice(e, k, count, nonce, aad, text, out)
    _copy_or_gather(e, k, count, nonce, aad, text, out)
    e.finish()


@dataclass
class _Pieces:
    """The pieces tuple once acquired: its descriptors, their count, the total length and a
    slot holding "every piece but the last is whole blocks"."""

    desc: ir.Value
    count: ir.Value
    total: ir.Value
    aligned_slot: ir.Value


@dataclass
class _Output:
    """Where the result goes: the object returned, the ciphertext and the tag pointers."""

    result: ir.Value
    text: ir.Value
    tag: ir.Value


def _path_counter(module: ir.Module, e: PyEntry, k: str) -> Callable[[str], None]:
    """How often each path ran (PATHS order), for tests and curious readers: one add a call."""
    b = e.b
    paths = ir.GlobalVariable(module, ir.ArrayType(i64, len(PATHS)), name=f"{k}_py_paths")
    paths.initializer = ir.Constant(ir.ArrayType(i64, len(PATHS)), None)
    paths.type = ptr

    def count(path: str) -> None:
        slot = b.gep(paths, [_c(8 * PATHS.index(path))], source_etype=i8)
        b.store(b.add(b.load(slot, typ=i64), _c(1)), slot)

    return count


def _text_of_pieces(e: PyEntry, tup: ir.Value) -> _Pieces:
    """Acquire every piece; sum their lengths (checked against GCM's limit at each step) and
    note whether all but the last are whole blocks."""
    b = e.b
    total_slot = b.alloca(i64)
    total_slot.type = ptr
    aligned_slot = b.alloca(i1)
    aligned_slot.type = ptr
    b.store(_c(0), total_slot)
    b.store(ir.Constant(i1, 1), aligned_slot)
    count_slot = b.alloca(i64)  # read inside `each`, before the count is returned
    count_slot.type = ptr
    b.store(e.call("PyTuple_Size", [tup]), count_slot)

    def each(i: ir.Value, got: Buffer, _d: ir.Value) -> None:
        t = b.add(b.load(total_slot, typ=i64), got.n)
        b.store(t, total_slot)
        # no sum of real buffers wraps 64 bits, but the limit is checked on each step
        e.guard(b.icmp_unsigned(">", t, _c(MAX_PLAINTEXT)), abi.RC_TEXT_TOO_LONG)
        not_last = b.icmp_signed("<", b.add(i, _c(1)), b.load(count_slot, typ=i64))
        whole = b.icmp_unsigned("==", b.and_(got.n, _c(15)), _c(0))
        b.store(b.and_(b.load(aligned_slot, typ=i1), b.or_(b.not_(not_last), whole)),
                aligned_slot)

    n_pieces, desc = e.pieces(tup, E_BUFFER - 2, each)
    return _Pieces(desc, n_pieces, b.load(total_slot, typ=i64), aligned_slot)


def _pieces_output(e: PyEntry, out_obj: ir.Value, nonce: Buffer, aad: Buffer,
                   text: _Pieces) -> _Output:
    """A new bytes object (ciphertext || tag), or the caller's buffer checked against every
    input: a piece exactly where its output goes is in place; any other overlap is refused."""
    b = e.b
    total = text.total
    none_bb, some_bb, join = (e.fn.append_basic_block(n) for n in ("out.new", "out.given",
                                                                   "out.join"))
    b.cbranch(e.is_none(out_obj), none_bb, some_bb)
    b.position_at_end(none_bb)
    res, res_p = e.new_bytes(b.add(total, _c(16)))
    res_tag = b.gep(res_p, [total], source_etype=i8)
    none_end = b.block
    b.branch(join)
    b.position_at_end(some_bb)
    given = e.acquire(out_obj, 3, True, E_BUFFER - 0)
    e.guard(b.icmp_unsigned("<", given.n, total), E_OUT_SMALL)
    for o in (nonce, aad):
        e.guard(e.overlap(given, total, o), E_OVERLAP)
    ovl = b.alloca(i1)
    ovl.type = ptr
    b.store(ir.Constant(i1, 0), ovl)

    def check(pp: ir.Value, pn: ir.Value, pos: ir.Value) -> None:
        exact = b.icmp_unsigned("==", pp, b.gep(given.p, [pos], source_etype=i8))
        hit = b.and_(b.not_(exact), e.overlap(given, total, Buffer(pp, pn)))
        b.store(b.or_(b.load(ovl, typ=i1), hit), ovl)

    e.each_piece(text.desc, text.count, check)
    e.guard(b.load(ovl, typ=i1), E_OVERLAP)
    g_obj, g_tag = e.new_bytes(_c(16))
    some_end = b.block
    b.branch(join)
    b.position_at_end(join)
    phis = []
    for typ, (a, c) in ((ptr, (res, g_obj)), (ptr, (res_p, given.p)), (ptr, (res_tag, g_tag))):
        phi = b.phi(typ)
        phi.add_incoming(a, none_end)
        phi.add_incoming(c, some_end)
        phis.append(phi)
    return _Output(*phis)


def _finish_with(e: PyEntry, rc: ir.Value, out: _Output) -> None:
    e.check_rc(rc, out.result)
    e.leave(out.result)


def _try_two_slice(e: PyEntry, k: str, count: Callable[[str], None], nonce: Buffer,
                   aad: Buffer, text: _Pieces, out: _Output) -> None:
    """A record shape (a piece of any length, then at most one byte; a 96-bit nonce, short
    AAD) goes to seal_two_slice, at every size no slower than copy + seal or the gather (design
    notes, "Records through vg.record"); RC_SHAPE from it means "not mine", and the general
    path runs."""
    b = e.b
    p0, p1 = text.desc, b.gep(text.desc, [_c(16)], source_etype=i8)
    n0 = b.load(b.gep(p0, [_c(8)], source_etype=i8), typ=i64)
    n1 = b.load(b.gep(p1, [_c(8)], source_etype=i8), typ=i64)
    shape = b.and_(b.and_(b.icmp_unsigned("==", text.count, _c(2)),
                          b.icmp_unsigned("==", nonce.n, _c(12))),
                   b.icmp_unsigned("<=", aad.n, _c(16)))
    with b.if_then(shape):
        with b.if_then(b.icmp_unsigned("<=", n1, _c(1))):
            rc = e.kernel(k, "seal_two_slice", [
                e.ctx, nonce.p, nonce.n, aad.p, aad.n, b.load(p0, typ=ptr), n0,
                b.load(p1, typ=ptr), n1, out.text, out.tag], text.total)
            with b.if_then(b.icmp_signed("!=", rc, ir.Constant(i32, abi.RC_SHAPE))):
                count("seal_two_slice")
                _finish_with(e, rc, out)


def _copy_or_gather(e: PyEntry, k: str, count: Callable[[str], None], nonce: Buffer,
                    aad: Buffer, text: _Pieces, out: _Output) -> None:
    """Below the caller's threshold (aligned or not) copy the pieces into the output and seal
    there; else seal_gather reads them where they lie."""
    b = e.b
    total = text.total
    aligned_below = b.load(b.gep(e.args, [_c(4)], source_etype=ptr), typ=ptr)
    unaligned_below = b.load(b.gep(e.args, [_c(5)], source_etype=ptr), typ=ptr)
    at = _small_int(e, aligned_below)
    ut = _small_int(e, unaligned_below)
    threshold = b.select(b.load(text.aligned_slot, typ=i1), at, ut)
    with b.if_else(b.icmp_unsigned("<", total, threshold)) as (copy, gather):
        with copy:
            count("seal")
            _copy_pieces(e, text.desc, text.count, out.text)
            rc_c = e.kernel(k, "seal", [e.ctx, nonce.p, nonce.n, aad.p, aad.n, out.text, total,
                                        out.tag], total)
            bb_c = b.block
        with gather:
            count("seal_gather")
            rc_g = e.kernel(k, "seal_gather", [e.ctx, nonce.p, nonce.n, aad.p, aad.n,
                                               text.desc, text.count, out.text, out.tag], total)
            bb_g = b.block
    rc = b.phi(i32)
    rc.add_incoming(rc_c, bb_c)
    rc.add_incoming(rc_g, bb_g)
    _finish_with(e, rc, out)


def _small_int(e: PyEntry, obj: ir.Value) -> ir.Value:
    """A threshold passed as a Python int: the binding's own caller passes small ints, read
    with PyLong's public conversion."""
    v = e.call("PyLong_AsSsize_t", [obj])
    return e.b.select(e.b.icmp_signed("<", v, _c(0)), _c(0), v)


def _copy_pieces(e: PyEntry, desc: ir.Value, count: ir.Value, out: ir.Value) -> None:
    b = e.b
    memmove = e.module.globals.get("llvm.memmove.p0.p0.i64")
    if memmove is None:
        memmove = ir.Function(e.module, ir.FunctionType(void, [ptr, ptr, i64, i1]),
                              name="llvm.memmove.p0.p0.i64")
    e.each_piece(desc, count, lambda p, n, pos: b.call(
        memmove, [b.gep(out, [pos], source_etype=i8), p, n, ir.Constant(i1, 0)]))


def _stream(module: ir.Module, k: str, seal: bool) -> None:
    """stream_encrypt(state, data, out) / stream_decrypt: out None -> bytes, else -> the
    number of bytes written.
    ``state`` is the stream's holder (ctypes array), its state 64-byte aligned inside."""
    name = "stream_encrypt" if seal else "stream_decrypt"
    e = PyEntry(module, f"{k}_py_{name}", 3, 4)
    b = e.b
    st = e.acquire(e.arg(0), 1, True, E_ARGS)
    state = b.inttoptr(b.and_(b.add(b.ptrtoint(st.p, i64), _c(63)), _c(-64)), ptr)
    data = e.acquire(e.arg(1), 2, False, E_BUFFER - 1)
    e.guard(b.icmp_unsigned(">", data.n, _c(MAX_PLAINTEXT)), abi.RC_TEXT_TOO_LONG)
    out_obj = e.arg(2)
    none_bb, some_bb, join = (e.fn.append_basic_block(n) for n in ("o.new", "o.given", "o.join"))
    b.cbranch(e.is_none(out_obj), none_bb, some_bb)
    b.position_at_end(none_bb)
    res, res_p = e.new_bytes(data.n)
    none_end = b.block
    b.branch(join)
    b.position_at_end(some_bb)
    given = e.acquire(out_obj, 3, True, E_BUFFER - 2)
    e.guard(b.icmp_unsigned("<", given.n, data.n), E_OUT_SMALL)
    same = b.icmp_unsigned("==", given.p, data.p)
    e.guard(b.and_(b.not_(same), e.overlap(given, data.n, data)), E_OVERLAP)
    zero_obj = e.call("PyLong_FromLong", [data.n])  # into: the number of bytes written
    some_end = b.block
    b.branch(join)
    b.position_at_end(join)
    result = b.phi(ptr)
    result.add_incoming(res, none_end)
    result.add_incoming(zero_obj, some_end)
    out_p = b.phi(ptr)
    out_p.add_incoming(res_p, none_end)
    out_p.add_incoming(given.p, some_end)
    rc = e.kernel(k, name, [e.ctx, state, data.p, out_p, data.n], data.n)
    e.check_rc(rc, result)
    e.leave(result)
    e.finish()


PATHS = ("seal_two_slice", "seal", "seal_gather")  # the kernels encrypt_pieces may take
ENTRIES = ("encrypt", "decrypt", "encrypt_in_place", "decrypt_in_place", "encrypt_into",
           "decrypt_into", "encrypt_pieces", "stream_encrypt", "stream_decrypt")


def generate(backend: Backend, prefix: str) -> str:
    """IR of the Python entries for the kernels exported under ``prefix``."""
    module = ir.Module(name=f"{prefix}_py")
    _prelude(module)
    _encrypt(module, prefix)
    _decrypt(module, prefix)
    _in_place(module, prefix, True)
    _in_place(module, prefix, False)
    _into(module, prefix, True)
    _into(module, prefix, False)
    _pieces(module, prefix, backend.two_slice)
    _stream(module, prefix, True)
    _stream(module, prefix, False)
    return str(module)
