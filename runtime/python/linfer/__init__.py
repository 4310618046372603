# SPDX-License-Identifier: Apache-2.0
"""linfer: run Linformer (and other linear-memory attention) transformer models from .lfm files.

    import linfer, numpy as np
    m = linfer.Model("model.lfm")            # mmap + verify; a bad file raises linfer.Error
    s = m.session(num_threads=2)              # all memory planned here
    y = s.run(np.array(ids, dtype=np.int32))  # float32 [T, C], or [1, classes] for a classifier
    h = s.hidden_states()                     # float32 [T, dim] of the last run

A binding over the C API (linfer.h) with ctypes: no compiled extension, so the same files work
with Python 3.6 or later and on any architecture liblinfer is built for. docs/python.md has the details:
errors, threads, which arrays are copies and which are views.
"""

import ctypes
import numbers
import os
import threading

import numpy as np

from . import _capi

__all__ = ["Model", "Session", "Error", "InvalidArgumentError", "FileError", "InvalidModelError",
           "UnsupportedError", "OutOfMemoryError", "InternalError", "library_version",
           "library_path", "__version__"]

library_path = _capi.library_path


def library_version():
    """The version string of the loaded liblinfer."""
    return _capi.lib.linfer_version().decode("ascii")


__version__ = _capi._build.VERSION if _capi._build else library_version()
if ".".join(__version__.split(".")[:2]) != ".".join(library_version().split(".")[:2]):
    raise ImportError("linfer: this Python package is version %s but %s is liblinfer %s; they must "
                      "agree in major and minor version" % (__version__, library_path,
                                                            library_version()))


# ------------------------------------------------------------------------------------------------
# Errors: one class per linfer_status, all derived from linfer.Error. str(e) is the C API's one-line
# message (linfer_last_error()) or, for what is refused before reaching it, one of the same kind.

class Error(Exception):
    """A linfer failure. `status` is the linfer_status code, `status_name` its name."""
    status = _capi.INTERNAL

    def __init__(self, message, status=None):
        super().__init__(message)
        if status is not None:
            self.status = status

    @property
    def status_name(self):
        return _capi.status_name(self.status)


class InvalidArgumentError(Error, ValueError):
    """A bad input, option or argument; also any use of a closed model or session."""
    status = _capi.INVALID_ARGUMENT


class FileError(Error, OSError):
    """The model file could not be opened, read or mapped."""
    status = _capi.IO


class InvalidModelError(Error):
    """The file is not a valid linfer model."""
    status = _capi.INVALID_MODEL


class UnsupportedError(Error):
    """A valid model or option that needs a feature this build of the library lacks."""
    status = _capi.UNSUPPORTED


class OutOfMemoryError(Error, MemoryError):
    status = _capi.OUT_OF_MEMORY


class InternalError(Error):
    status = _capi.INTERNAL


_ERRORS = {c.status: c for c in (InvalidArgumentError, FileError, InvalidModelError,
                                  UnsupportedError, OutOfMemoryError, InternalError)}


def _check(status):
    """Raises the error of a failed C call; must run on the thread that made the call, right
    after it (the message is per thread and valid until the next call)."""
    if status != _capi.OK:
        raise _ERRORS.get(status, Error)(_capi.last_error(), status)


def _invalid(message):
    return InvalidArgumentError(message)


# ------------------------------------------------------------------------------------------------
# Native handles. A session's handle holds its model's, and an output view holds its session's,
# so nothing is freed while something that reads it is alive: close() only drops the owner's
# reference, and the memory goes with the last one.

class _Handle:
    __slots__ = ("ptr", "_free", "owner", "__weakref__")

    def __init__(self, ptr, free, owner=None):
        self.ptr = ptr
        self._free = free  # kept here: module globals may be gone when this is collected at exit
        self.owner = owner

    def __del__(self):
        if self.ptr:
            self._free(self.ptr)
            self.ptr = None


class _ArenaView:
    """numpy's array interface over floats in a session's arena (read-only); the array built on
    it keeps this object, and through it the session's native handle, alive."""

    def __init__(self, address, rows, cols, handle):
        self.__array_interface__ = {"shape": (rows, cols), "typestr": np.dtype(np.float32).str,
                                    "data": (address, True), "version": 3}
        self._handle = handle


def _uint32(name, value, allow_none=False):
    if value is None and allow_none:
        return 0
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise _invalid("%s must be an integer, got %r" % (name, value))
    if not 0 <= int(value) <= 0xFFFFFFFF:
        raise _invalid("%s must be in [0, 4294967295], got %d" % (name, int(value)))
    return int(value)


def _enum(name, value, names):
    """An option given by name (the keys of `names`) or as the C enum's integer, which the
    library checks."""
    if isinstance(value, str):
        if value not in names:
            raise _invalid("%s must be one of %s, got %r" % (name, ", ".join(repr(k) for k in names),
                                                             value))
        return names[value]
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise _invalid("%s must be one of %s, got %r" % (name, ", ".join(repr(k) for k in names),
                                                         value))
    if not -0x80000000 <= int(value) <= 0x7FFFFFFF:
        raise _invalid("%s %d is out of range" % (name, int(value)))
    return int(value)


# ------------------------------------------------------------------------------------------------

class _Closable:
    """close(), closed and the context manager of Model and Session (both hold a _Handle)."""

    def close(self):
        self._handle = None

    @property
    def closed(self):
        return self._handle is None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class Model(_Closable):
    """A loaded .lfm model: the file is memory-mapped and verified when the object is made.

    Immutable: share one Model between any number of sessions and threads. close() (or leaving a
    `with` block) releases it once the sessions made from it are gone as well."""

    def __init__(self, path):
        if isinstance(path, (str, bytes)) or hasattr(path, "__fspath__"):
            encoded = os.fsencode(path)
        else:
            raise _invalid("the model path must be a str, bytes or os.PathLike, got %r" % (path,))
        if b"\0" in encoded:
            raise _invalid("the model path contains a NUL character")
        self.path = os.fsdecode(encoded)
        ptr = _capi._model_p()
        _check(_capi.lib.linfer_model_load(encoded, ctypes.byref(ptr)))
        self._adopt(ptr)

    @classmethod
    def from_bytes(cls, data):
        """Loads a model from the bytes of an .lfm file (any object with the buffer protocol);
        the library copies them."""
        try:
            buf = np.frombuffer(data, dtype=np.uint8)
        except (TypeError, ValueError) as e:
            raise _invalid("model bytes must be a bytes-like object (%s)" % e) from None
        self = cls.__new__(cls)
        self.path = None
        ptr = _capi._model_p()
        _check(_capi.lib.linfer_model_load_from_memory(buf.ctypes.data, buf.size, ctypes.byref(ptr)))
        self._adopt(ptr)
        return self

    def _adopt(self, ptr):
        self._handle = _Handle(ptr.value, _capi.lib.linfer_model_free)
        info = _capi.ModelInfo()
        info.struct_size = ctypes.sizeof(info)
        _check(_capi.lib.linfer_model_get_info(ptr.value, ctypes.byref(info)))
        self._info = _info_dict(info)

    def _live(self):
        h = self._handle
        if h is None:
            raise _invalid("the model is closed")
        return h

    @property
    def info(self):
        """A new dict: the C API's linfer_model_info (attention_kind, num_layers, dim, num_heads,
        head_dim, ff_dim, max_seq_len, proj_len, weight_dtype, vocab_size, head, output_channels,
        parameter_count, file_bytes, resident_weight_bytes, format_version) and the short names
        n (= max_seq_len), k (= proj_len) and num_classes (output_channels of a classifier, else 0).
        A field the loaded library does not have (an older library) is absent."""
        self._live()
        return dict(self._info)

    def flops(self, length):
        """Floating-point operations of one run over `length` tokens (multiply-add = 2)."""
        length = _uint32("length", length)
        return int(_capi.lib.linfer_model_flops(self._live().ptr, length))

    @property
    def has_tokenizer(self):
        """Whether the model file carries its tokenizer (docs/tokenizers.md)."""
        return bool(_capi.lib.linfer_model_has_tokenizer(self._live().ptr))

    def tokenize(self, text):
        """The model's token ids of `text` (str, or UTF-8 bytes) with the model's template around
        them ([CLS] ... [SEP], <s> ... </s>), by the tokenizer the file carries: a 1-D int32
        array. UnsupportedError for a model without one."""
        if isinstance(text, str):
            data = text.encode("utf-8", "surrogatepass")
        elif isinstance(text, (bytes, bytearray, memoryview)):
            data = bytes(text)
        else:
            raise _invalid("tokenize takes a str or bytes, got %r" % type(text).__name__)
        ptr = self._live().ptr
        count = ctypes.c_size_t()
        _check(_capi.lib.linfer_tokenize(ptr, data, len(data), None, 0, ctypes.byref(count)))
        ids = np.zeros(count.value, dtype=np.int32)
        _check(_capi.lib.linfer_tokenize(ptr, data, len(data), ids.ctypes.data_as(ctypes.POINTER(ctypes.c_int32)),
                                         ids.size, ctypes.byref(count)))
        return ids

    def detokenize(self, ids):
        """The text of token ids (the template's and other special tokens left out), a str
        (ill-formed UTF-8 of a cut byte-level sequence becomes U+FFFD)."""
        arr = np.ascontiguousarray(_token_array(ids), dtype=np.int32)
        ptr = self._live().ptr
        ids_p = arr.ctypes.data_as(ctypes.POINTER(ctypes.c_int32))
        length = ctypes.c_size_t()
        _check(_capi.lib.linfer_detokenize(ptr, ids_p, arr.size, None, 0, ctypes.byref(length)))
        buf = ctypes.create_string_buffer(max(length.value, 1))
        _check(_capi.lib.linfer_detokenize(ptr, ids_p, arr.size, buf, length.value, ctypes.byref(length)))
        return buf.raw[:length.value].decode("utf-8", "replace")

    def embed(self, texts, num_threads=1):
        """Sentence embeddings of `texts` (a str, or a sequence of str): float32 [len(texts), dim],
        one row per text (a 1-D array for one str). The model must carry its tokenizer and pool
        its output (info["head"] == "pooled": a sentence-transformers model converted with its
        modules.json, or linfer-convert --pooling). A text longer than the model's n tokens is
        cut to n, keeping its closing token, as Hugging Face's truncation does."""
        single = isinstance(texts, str)
        if single:
            texts = [texts]
        elif isinstance(texts, (bytes, bytearray)) or not hasattr(texts, "__iter__"):
            raise _invalid("embed takes a str or a sequence of str, got %r" % type(texts).__name__)
        texts = list(texts)
        for t in texts:
            if not isinstance(t, str):
                raise _invalid("embed takes a str or a sequence of str, got an item of type %r" % type(t).__name__)
        if self._info["head"] != "pooled":
            raise UnsupportedError("the model's output is not a pooled vector (convert it with its modules.json, "
                                   "or with linfer-convert --pooling cls|mean)")
        if not self.has_tokenizer:
            raise UnsupportedError("the model file carries no tokenizer")
        n = self._info["max_seq_len"]
        out = np.zeros((len(texts), self._info["dim"]), dtype=np.float32)
        with self.session(num_threads=num_threads) as s:
            for i, t in enumerate(texts):
                ids = self.tokenize(t)
                if ids.size > n:
                    ids = np.concatenate([ids[:n - 1], ids[-1:]])
                out[i] = s.run(ids, copy=False)[0]
        return out[0] if single else out

    def session(self, max_seq_len=None, num_threads=1, **options):
        """A new Session on this model; see Session for the options."""
        return Session(self, max_seq_len=max_seq_len, num_threads=num_threads, **options)

    def __repr__(self):
        if self._handle is None:
            return "<linfer.Model closed>"
        i = self._info
        return "<linfer.Model %s: %s, %d layers, dim %d, n=%d, %s>" % (
            self.path or "(from bytes)", i["attention_kind"], i["num_layers"], i["dim"], i["n"],
            i["weight_dtype"])


_INFO_FIELDS = ["vocab_size", "dim", "num_layers", "num_heads", "head_dim", "ff_dim", "max_seq_len",
                "proj_len", "head", "output_channels", "parameter_count", "file_bytes",
                "resident_weight_bytes", "attention_kind", "weight_dtype", "format_version"]


def _info_dict(info):
    written = info.struct_size  # the library wrote this many bytes: fields past it are unknown
    out = {}
    for name in _INFO_FIELDS:
        field = getattr(_capi.ModelInfo, name)
        if field.offset + field.size > written:
            continue
        value = getattr(info, name)
        if name == "head":
            value = _capi.HEAD_KINDS.get(value, "unknown(%d)" % value)
        elif isinstance(value, bytes):
            value = value.decode("utf-8", "replace")
        out[name] = value
    out["n"] = out["max_seq_len"]
    out["k"] = out["proj_len"]
    out["num_classes"] = out["output_channels"] if out["head"] == "classifier" else 0
    return out


# ------------------------------------------------------------------------------------------------

_INT32_MIN, _INT32_MAX = -(1 << 31), (1 << 31) - 1


def _token_array(ids):
    """The token ids as a 1-D integer ndarray (not yet int32), or InvalidArgumentError. Accepted:
    a 1-D array or sequence of integers of any integer dtype (values must fit int32), bytes and
    bytearray (one id per byte). Refused: floats (even integral ones), bools, strings, None,
    scalars, 2-D arrays."""
    if isinstance(ids, (bytes, bytearray)):
        return np.frombuffer(bytes(ids), dtype=np.uint8)
    if ids is None or isinstance(ids, str):
        raise _invalid("token ids must be a 1-D sequence of integers, got %s"
                       % ("None" if ids is None else "a str (encode it first)"))
    arr = ids if isinstance(ids, np.ndarray) else np.asarray(ids)
    if arr.ndim != 1:
        raise _invalid("token ids must be 1-D, got an array of shape %s" % (arr.shape,))
    if arr.dtype.kind not in "iu":
        if arr.size == 0 and not isinstance(ids, np.ndarray):
            return np.zeros(0, dtype=np.int32)  # [] reads as float64: the C API refuses length 0
        raise _invalid("token ids must be integers, got an array of %s" % arr.dtype)
    return arr


def _check_int32(arr, vocab):
    """Values beyond int32 cannot be passed to the C API; they are outside any vocabulary, and
    refused with the message the C API gives for ids outside it."""
    if arr.dtype.itemsize < 4 or (arr.dtype.itemsize == 4 and arr.dtype.kind == "i") or arr.size == 0:
        return
    bad = np.flatnonzero((arr < _INT32_MIN) | (arr > _INT32_MAX))
    if bad.size:
        t = int(bad[0])
        raise _invalid("token id %d at position %d is outside the vocabulary [0, %d)"
                       % (int(arr[t]), t, vocab))


class Session(_Closable):
    """A session: all the memory of runs up to max_seq_len tokens, planned when it is made.

    Options (linfer_session_options; the defaults are the C API's):
      max_seq_len          longest input; None: the model's n
      num_threads          worker threads of a run (0 or 1: the calling thread)
      dense_path           'auto' (linfer's kernels on the model's weights) or 'xnnpack'
      row_pipeline         'auto', 'off' or 'on'
      pipeline_block_rows  rows per row-pipeline block; 0: chosen for the cache
      thread_wait          'auto', 'spin' or 'yield'
      max_isa              'auto', 'generic', 'sse4', 'avx2', 'avxvnni', 'avx512', 'avx512_vnni',
                           'avx512_bf16', 'amx', 'neon', 'neon_dot', 'neon_i8mm': the highest
                           instruction set the kernels may use
      fp16_arithmetic      True: f16 layers use fp16 multiply-adds and f16 sums where the CPU has
                           them (ARMv8.2 FP16, Raspberry Pi 5), about 0.5% from the f32 result;
                           ignored elsewhere (f32/int8 layers, CPUs without it, max_isa below
                           'neon_dot')
      profiling            True: time per operator kind (profile())
    Enum options also take the C enum's integer value, which the library checks.

    One thread at a time runs a session: a second thread calling it waits for the first (a lock).
    The GIL is released while the library runs, so sessions on different threads run in parallel.
    """

    def __init__(self, model, max_seq_len=None, num_threads=1, dense_path="auto", row_pipeline="auto",
                 pipeline_block_rows=0, thread_wait="auto", max_isa="auto", profiling=False,
                 fp16_arithmetic=False):
        if not isinstance(model, Model):
            raise _invalid("a Session needs a linfer.Model, got %r" % (model,))
        o = _capi.SessionOptions.default()
        o.max_seq_len = _uint32("max_seq_len", max_seq_len, allow_none=True)
        o.num_threads = _uint32("num_threads", num_threads)
        o.dense_path = _enum("dense_path", dense_path, _capi.DENSE_PATHS)
        o.row_pipeline = _enum("row_pipeline", row_pipeline, _capi.ROW_PIPELINES)
        o.pipeline_block_rows = _uint32("pipeline_block_rows", pipeline_block_rows)
        o.thread_wait = _enum("thread_wait", thread_wait, _capi.THREAD_WAITS)
        o.max_isa = _enum("max_isa", max_isa, _capi.ISAS)
        o.enable_profiling = 1 if profiling else 0
        o.fp16_arithmetic = 1 if fp16_arithmetic else 0
        model_handle = model._live()
        ptr = _capi._session_p()
        _check(_capi.lib.linfer_session_create(model_handle.ptr, ctypes.byref(o), ctypes.byref(ptr)))
        self._handle = _Handle(ptr.value, _capi.lib.linfer_session_free, owner=model_handle)
        self._lock = threading.Lock()
        info = model._info
        self.model = model
        self.max_seq_len = o.max_seq_len or info["max_seq_len"]
        self.num_threads = o.num_threads
        self._vocab = info["vocab_size"]
        self._dim = info["dim"]
        # Token ids are copied here before a run: the library checks every id, then reads them
        # again to look up the embeddings, with the GIL released. Reading the caller's array then
        # would let another thread change an id after the check.
        self._ids = np.zeros(self.max_seq_len, dtype=np.int32)
        self._ids_ptr = self._ids.ctypes.data_as(ctypes.POINTER(ctypes.c_int32))
        # Out-parameters of linfer_session_output / _hidden_states, used under the lock.
        self._out = (ctypes.c_void_p(), ctypes.c_size_t(), ctypes.c_size_t())
        self._out_refs = tuple(ctypes.byref(x) for x in self._out)

    # -- state ------------------------------------------------------------------------------------

    def _live(self):
        h = self._handle
        if h is None:
            raise _invalid("the session is closed")
        return h

    def close(self):
        """Ends the session. Its memory is released now, or when the last view returned with
        copy=False is gone."""
        self._handle = None

    def __repr__(self):
        if self._handle is None:
            return "<linfer.Session closed>"
        return "<linfer.Session max_seq_len=%d num_threads=%d>" % (self.max_seq_len, self.num_threads)

    # -- runs -------------------------------------------------------------------------------------

    def run(self, ids, copy=True):
        """Runs the model on token ids; returns its output, float32 [T, C] ([1, classes] for a
        classifier). ids: a 1-D sequence or array of integers (see docs/python.md).

        copy=True (default): a new array the caller owns. copy=False: a read-only view of the
        session's output buffer, valid until this session's next run or step, which overwrite it."""
        arr = _token_array(ids)
        _check_int32(arr, self._vocab)
        n = arr.shape[0]
        with self._lock:
            h = self._live()
            if n <= self.max_seq_len:
                self._ids[:n] = arr  # int32: values were checked to fit
                status = _capi.lib.linfer_session_run(h.ptr, self._ids_ptr, n)
            else:  # the library refuses the length before reading anything; give it its own copy
                tmp = np.ascontiguousarray(arr, dtype=np.int32)
                status = _capi.lib.linfer_session_run(
                    h.ptr, tmp.ctypes.data_as(ctypes.POINTER(ctypes.c_int32)), n)
            _check(status)
            return self._result(h, _capi.lib.linfer_session_output, copy)

    def run_text(self, text, copy=True):
        """Tokenizes `text` with the model's tokenizer (Model.tokenize) and runs the ids."""
        return self.run(self.model.tokenize(text), copy=copy)

    def run_embeddings(self, embeddings, copy=True):
        """Runs the model on token embeddings, float [T, dim] (positions are added by the model),
        for models that take embeddings (vocab_size 0) or any other. float64 and float16 arrays
        are converted to float32; a float32 C-contiguous array is read in place (the library
        copies it before computing)."""
        if embeddings is None:
            raise _invalid("embeddings must be a 2-D float array [T, %d], got None" % self._dim)
        x = np.asarray(embeddings)
        if x.ndim != 2 or x.shape[1] != self._dim:
            raise _invalid("embeddings must be [T, %d], got an array of shape %s" % (self._dim, x.shape))
        if x.dtype.kind != "f":
            raise _invalid("embeddings must be floating point, got an array of %s" % x.dtype)
        x = np.ascontiguousarray(x, dtype=np.float32)
        with self._lock:
            h = self._live()
            _check(_capi.lib.linfer_session_run_embeddings(
                h.ptr, x.ctypes.data_as(ctypes.POINTER(ctypes.c_float)), x.shape[0]))
            return self._result(h, _capi.lib.linfer_session_output, copy)

    def step(self, token_id, copy=True):
        """Causal models of the kinds that keep an attention state (linear_elu; performer, unless
        its key stabiliser spans the input): feeds one token, carrying each layer's attention
        state, and returns the new output row, float32 [1, C]. run() or reset_state() start over."""
        if isinstance(token_id, np.ndarray) and token_id.ndim == 0:
            token_id = token_id[()]
        if isinstance(token_id, bool) or not isinstance(token_id, numbers.Integral):
            raise _invalid("a token id must be an integer, got %r" % (token_id,))
        if not _INT32_MIN <= int(token_id) <= _INT32_MAX:
            raise _invalid("token id %d at position 0 is outside the vocabulary [0, %d)"
                           % (int(token_id), self._vocab))
        with self._lock:
            h = self._live()
            _check(_capi.lib.linfer_session_step(h.ptr, int(token_id)))
            return self._result(h, _capi.lib.linfer_session_output, copy)

    def reset_state(self):
        """Forgets the tokens fed by step(): the next step() starts a new sequence."""
        with self._lock:
            _capi.lib.linfer_session_reset_state(self._live().ptr)

    def output(self, copy=True):
        """The last run's (or step's) output again."""
        with self._lock:
            h = self._live()
            return self._result(h, _capi.lib.linfer_session_output, copy)

    def hidden_states(self, copy=True):
        """The last run's final hidden states, float32 [T, dim] (after the final norm, before any
        head); [1, dim] after a step."""
        with self._lock:
            h = self._live()
            return self._result(h, _capi.lib.linfer_session_hidden_states, copy)

    def _result(self, h, getter, copy):
        _check(getter(h.ptr, *self._out_refs))
        address, rows, cols = (x.value for x in self._out)
        if copy:
            out = np.empty((rows, cols), dtype=np.float32)
            ctypes.memmove(out.ctypes.data, address, out.nbytes)
            return out
        return np.asarray(_ArenaView(address, rows, cols, h))

    # -- what it is -------------------------------------------------------------------------------

    def describe(self):
        """One line: the dense kernels per weight dtype, the other kernels' target, the row
        pipeline, threads."""
        with self._lock:
            return _capi.lib.linfer_session_describe(self._live().ptr).decode("utf-8", "replace")

    def memory(self):
        """{'arena_bytes': the session's arena, 'packed_weight_bytes': weights it holds of its own
        (0 on linfer's kernels, which read the model's; XNNPACK's packed copies otherwise)}."""
        arena, packed = ctypes.c_size_t(), ctypes.c_size_t()
        with self._lock:
            _check(_capi.lib.linfer_session_memory(self._live().ptr, ctypes.byref(arena),
                                                   ctypes.byref(packed)))
        return {"arena_bytes": arena.value, "packed_weight_bytes": packed.value}

    def profile(self):
        """Milliseconds per operator kind summed over the runs since creation or profile_reset(),
        and 'runs'. Needs profiling=True (all zero otherwise)."""
        p = _capi.Profile()
        with self._lock:
            _check(_capi.lib.linfer_session_profile(self._live().ptr, ctypes.byref(p)))
        out = {_capi.lib.linfer_op_kind_name(k).decode("ascii"): p.milliseconds[k]
               for k in range(_capi.OP_KIND_COUNT)}
        out["runs"] = p.runs
        return out

    def profile_reset(self):
        with self._lock:
            _capi.lib.linfer_session_profile_reset(self._live().ptr)
