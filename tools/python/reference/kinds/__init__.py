# SPDX-License-Identifier: Apache-2.0
"""The attention kinds of the Python references, one file per kind: kinds/<name>.py, <name> the
kind's name in schema/attention_kinds.txt (the one table of kinds, read here). linfer_ref.py (the
PyTorch reference) and check_kinds.py (the independent numpy forward) find a kind's file by that
name and hold no code of any one kind. A kind's file has two parts that share no code: its
PyTorch module and configuration for linfer_ref.py, and its numpy forward for check_kinds.py
(written again from docs/converter.md, with only check_common.py's plain numpy helpers).

For linfer_ref.py a kind's file defines
  USES                  the common keys (linfer_ref.COMMON_KEYS: proj_len, proj_bias, causal,
                        num_global_tokens, conv_kernel, rotary) it uses; every other kind must
                        leave them at their "unused" value, and the error names the kinds that use
                        the key. The kind checks the values of those it uses (proj_len: > 0,
                        rotary: generic).
  resolve(config, cfg)  adds its own keys to the resolved config cfg (defaults filled in, in the
                        order they are written), raising ValueError("config: ...") on a bad value;
                        config is the caller's dict.
  make_attention(cfg, layer_index)
                        its attention module: q, k, v, out linears (linfer_ref._DenseAttention)
                        and its own tensors; forward(x, model_tensors, rot) maps the rows x [R,
                        dim] to [R, dim]; model_tensors: the encoder's tensors of this kind by name
                        (model_tensors below), rot: the rotary table's first T rows or None.
and where it has them
  model_tensors(cfg)    the encoder's tensors of this kind (not of a layer), an OrderedDict of
                        name -> nn.Parameter, registered in that order.
  ADDED_ROWS            the name of the model tensor whose rows every input gets below its T
                        sequence rows (learned global tokens): they go through every layer with
                        the sequence and are dropped after the last one.
  init_value(name, noise, embed_std, proj_std)
                        the random value linfer_ref.init_random gives its parameter `name` (noise:
                        standard normal, float64, of the parameter's shape), or None for the
                        generic rule.
  COMMON_KEYS_WHEN_GIVEN = True
                        its resolved config holds causal, num_global_tokens and conv_kernel only
                        when the caller gave them (every other kind's holds them always).

For check_kinds.py it defines
  numpy_attention(cfg, sd, prefix, x)
                        the attention sublayer's output for the rows x (float64 numpy), the layer's
                        tensors being sd[prefix + name]; a kind with ADDED_ROWS takes and returns
                        both streams: numpy_attention(cfg, sd, prefix, x, added) -> (out, added_out).
and where it has them
  KEY_LINEAR = False    its layers have no k linear (the queries are the keys).
  numpy_shapes(cfg, qkv_bias)
                        its tensors' shapes: (model's {name: shape}, a layer's {name under
                        "layers.<i>.attention.": shape}), beside the q, k, v and out linears.
  numpy_stream(cfg, sd, ids)
                        a causal model's output computed token by token, carrying only its state.
  CAUSAL_PREFIX = False a causal model's rows still depend on later rows (no prefix check).
  numpy_case_start(), numpy_case_verdict() -> (ok, text)
                        a check of its own over one case's runs (e.g. a margin of its hashes).
  numpy_extra_check(name, case_dir, config, sd) -> bool or None
                        a further check of a case (None: not for this case).
"""

import importlib
import os

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", "..", "..", ".."))  # the source tree
TABLE = os.path.join(ROOT, "schema", "attention_kinds.txt")


def _table_names():
    """The kinds' names, in the table's order (the schema's AttentionKind enum)."""
    with open(TABLE, encoding="utf-8") as f:
        return tuple(line.split()[0] for line in f if line[:1].isalpha())


NAMES = _table_names()


def load(name):
    """The module kinds/<name>.py of the kind `name` of the table; ValueError if there is none."""
    if name not in NAMES:
        raise ValueError("attention kind %r is not in schema/attention_kinds.txt (one of %s)" % (name, ", ".join(NAMES)))
    path = os.path.join(HERE, name + ".py")
    if not os.path.isfile(path):
        raise ValueError("attention kind %r of schema/attention_kinds.txt has no reference file %s" % (
            name, os.path.relpath(path, ROOT)))
    return importlib.import_module(__name__ + "." + name)


def load_all():
    """Every kind's module, in the table's order; ValueError for the first kind without its file."""
    return [load(name) for name in NAMES]


def names_using(key):
    """The kinds whose USES names the common key `key`, as prose: "a", "a and b", "a, b and c"."""
    found = [name for name in NAMES if key in load(name).USES]
    return found[0] if len(found) == 1 else ", ".join(found[:-1]) + " and " + found[-1]
