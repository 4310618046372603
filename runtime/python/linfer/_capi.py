# SPDX-License-Identifier: Apache-2.0
"""ctypes declarations of linfer's C API (runtime/include/linfer/linfer.h) and the library lookup.

Everything here mirrors linfer.h; nothing else in the package touches ctypes types directly.
ctypes releases the GIL around every call into a CDLL, so sessions run in parallel on threads.
"""

import ctypes
import os

try:
    from . import _build
except ImportError:  # a checkout's runtime/python, never configured by CMake
    _build = None

# linfer_status
OK = 0
INVALID_ARGUMENT = 1
IO = 2
INVALID_MODEL = 3
UNSUPPORTED = 4
OUT_OF_MEMORY = 5
BUFFER_TOO_SMALL = 6
INTERNAL = 7

HEAD_KINDS = {0: "none", 1: "lm_logits", 2: "classifier", 3: "pooled"}
DENSE_PATHS = {"auto": 0, "xnnpack": 1}
ROW_PIPELINES = {"auto": 0, "off": 1, "on": 2}
THREAD_WAITS = {"auto": 0, "spin": 1, "yield": 2}
ISAS = {"auto": 0, "generic": 1, "avx2": 2, "avxvnni": 3, "avx512": 4, "avx512_vnni": 5,
        "neon": 6, "neon_dot": 7, "sse4": 8, "neon_i8mm": 9, "amx": 10, "avx512_bf16": 11}
OP_KIND_COUNT = 7


class ModelInfo(ctypes.Structure):
    """linfer_model_info. struct_size = sizeof(ModelInfo): the library writes the fields that fit
    and sets struct_size to what it wrote, so a field past that is from a later header."""
    _fields_ = [
        ("struct_size", ctypes.c_size_t),
        ("vocab_size", ctypes.c_uint32),
        ("dim", ctypes.c_uint32),
        ("num_layers", ctypes.c_uint32),
        ("num_heads", ctypes.c_uint32),
        ("head_dim", ctypes.c_uint32),
        ("ff_dim", ctypes.c_uint32),
        ("max_seq_len", ctypes.c_uint32),
        ("proj_len", ctypes.c_uint32),
        ("head", ctypes.c_int),  # linfer_head_kind
        ("output_channels", ctypes.c_uint32),
        ("parameter_count", ctypes.c_uint64),
        ("file_bytes", ctypes.c_uint64),
        ("resident_weight_bytes", ctypes.c_uint64),
        ("attention_kind", ctypes.c_char_p),
        ("weight_dtype", ctypes.c_char_p),
        ("format_version", ctypes.c_uint32),
    ]


class SessionOptions(ctypes.Structure):
    """linfer_session_options. Built here with the defaults linfer.h documents rather than
    returned by value from linfer_session_options_default(): a struct returned by value has the
    size the library was compiled with, and a later library's larger struct would be written past
    the end of this one. struct_size = sizeof(SessionOptions) tells the library which fields are
    ours; the ones it appended later keep its defaults."""
    _fields_ = [
        ("struct_size", ctypes.c_size_t),
        ("max_seq_len", ctypes.c_uint32),
        ("num_threads", ctypes.c_uint32),
        ("arena", ctypes.c_void_p),
        ("arena_size", ctypes.c_size_t),
        ("enable_profiling", ctypes.c_uint32),
        ("dense_path", ctypes.c_int),    # linfer_dense_path
        ("row_pipeline", ctypes.c_int),  # linfer_row_pipeline
        ("pipeline_block_rows", ctypes.c_uint32),
        ("thread_wait", ctypes.c_int),   # linfer_thread_wait
        ("max_isa", ctypes.c_int),       # linfer_isa
        ("fp16_arithmetic", ctypes.c_uint32),
    ]

    @classmethod
    def default(cls):
        o = cls()  # ctypes zero-fills: every enum at its AUTO value, no arena
        o.struct_size = ctypes.sizeof(cls)
        o.num_threads = 1
        return o


class Profile(ctypes.Structure):
    _fields_ = [("milliseconds", ctypes.c_double * OP_KIND_COUNT), ("runs", ctypes.c_uint64)]


_model_p = ctypes.c_void_p
_session_p = ctypes.c_void_p
_data_p = ctypes.POINTER(ctypes.c_void_p)  # const float** out_data, read as an address
_size_p = ctypes.POINTER(ctypes.c_size_t)

_SIGNATURES = {
    "linfer_version": (ctypes.c_char_p, []),
    "linfer_status_string": (ctypes.c_char_p, [ctypes.c_int]),
    "linfer_last_error": (ctypes.c_char_p, []),
    "linfer_model_load": (ctypes.c_int, [ctypes.c_char_p, ctypes.POINTER(_model_p)]),
    "linfer_model_load_from_memory": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_size_t,
                                                     ctypes.POINTER(_model_p)]),
    "linfer_model_free": (None, [_model_p]),
    "linfer_model_get_info": (ctypes.c_int, [_model_p, ctypes.POINTER(ModelInfo)]),
    "linfer_model_flops": (ctypes.c_uint64, [_model_p, ctypes.c_size_t]),
    "linfer_session_options_default": (SessionOptions, []),
    "linfer_session_arena_size": (ctypes.c_int, [_model_p, ctypes.POINTER(SessionOptions), _size_p]),
    "linfer_session_create": (ctypes.c_int, [_model_p, ctypes.POINTER(SessionOptions),
                                             ctypes.POINTER(_session_p)]),
    "linfer_session_free": (None, [_session_p]),
    "linfer_session_run": (ctypes.c_int, [_session_p, ctypes.POINTER(ctypes.c_int32), ctypes.c_size_t]),
    "linfer_session_run_embeddings": (ctypes.c_int, [_session_p, ctypes.POINTER(ctypes.c_float),
                                                     ctypes.c_size_t]),
    "linfer_session_step": (ctypes.c_int, [_session_p, ctypes.c_int32]),
    "linfer_session_reset_state": (None, [_session_p]),
    "linfer_session_output": (ctypes.c_int, [_session_p, _data_p, _size_p, _size_p]),
    "linfer_session_hidden_states": (ctypes.c_int, [_session_p, _data_p, _size_p, _size_p]),
    "linfer_session_profile": (ctypes.c_int, [_session_p, ctypes.POINTER(Profile)]),
    "linfer_session_profile_reset": (None, [_session_p]),
    "linfer_op_kind_name": (ctypes.c_char_p, [ctypes.c_int]),
    "linfer_session_memory": (ctypes.c_int, [_session_p, _size_p, _size_p]),
    "linfer_session_describe": (ctypes.c_char_p, [_session_p]),
    "linfer_model_has_tokenizer": (ctypes.c_int, [_model_p]),
    "linfer_tokenize": (ctypes.c_int, [_model_p, ctypes.c_char_p, ctypes.c_size_t, ctypes.POINTER(ctypes.c_int32),
                                       ctypes.c_size_t, _size_p]),
    "linfer_detokenize": (ctypes.c_int, [_model_p, ctypes.POINTER(ctypes.c_int32), ctypes.c_size_t,
                                         ctypes.c_char_p, ctypes.c_size_t, _size_p]),
}


def _candidates():
    """Where liblinfer is looked for, in order: $LINFER_LIBRARY (a file), the location CMake wrote
    into _build.py (the build tree's library, or PREFIX/<libdir> of an installed package, relative
    to this folder; none in Debian's python3-linfer), then the dynamic loader's own search by soname
    (LD_LIBRARY_PATH, ld.so.cache)."""
    here = os.path.dirname(os.path.abspath(__file__))
    soname = _build.LIBRARY_SONAME if _build else "liblinfer.so.0"
    out = []
    if os.environ.get("LINFER_LIBRARY"):
        out.append(os.environ["LINFER_LIBRARY"])
    if _build and _build.LIBRARY_DIR:
        out.append(os.path.normpath(os.path.join(here, _build.LIBRARY_DIR, soname)))
    out.append(soname)
    return out


def _load():
    tried = []
    for path in _candidates():
        if os.sep in path and not os.path.exists(path):
            tried.append(path + " (no such file)")
            continue
        try:
            lib = ctypes.CDLL(path)
        except OSError as e:
            tried.append("%s (%s)" % (path, e))
            continue
        for name, (restype, argtypes) in _SIGNATURES.items():
            fn = getattr(lib, name)
            fn.restype = restype
            fn.argtypes = argtypes
        return lib, path
    raise ImportError("linfer: cannot load the linfer library; tried " + "; ".join(tried))


lib, library_path = _load()


def last_error():
    return (lib.linfer_last_error() or b"").decode("utf-8", "replace")


def status_name(status):
    return (lib.linfer_status_string(status) or b"").decode("ascii", "replace")
