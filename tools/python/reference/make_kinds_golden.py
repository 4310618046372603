# SPDX-License-Identifier: Apache-2.0
"""Writes the golden fixtures of the attention kinds' own cases under tests/golden_kinds/
(deterministic, about two seconds; the first kind of the table has the cases of tests/golden).

    /usr/bin/python3 tools/python/reference/make_kinds_golden.py [OUT_DIR] [--case NAME]...

Each case is a folder tests/golden_kinds/<case>/ whose case.json says how it is made; this script
lists no cases. It reads every tests/golden_kinds/*/case.json of the source tree, in folder-name
order, and writes that case's files into OUT_DIR/<case>/ (default OUT_DIR: tests/golden_kinds
itself; another OUT_DIR gets a copy of each case.json). A new case is a new folder holding a
case.json: run the script and it is made and listed. --case NAME (repeatable) rewrites only those
cases. case.json holds:
  "format"      "safetensors", or "torch" (torch.save of {"linfer_config": json, "state_dict": sd})
  "explicit"    optional, true: config.json and the checkpoint's config get every key (defaults
                resolved, proj_len 0 included) instead of only the keys given
  "seed_index"  the case's seed is 1000 + 17 * seed_index (make_golden.write_case); each case has
                its own, from 100 up (below 100: tests/golden's); a new case takes the largest + 1
  "config"      the model configuration (tools/python/reference/linfer_ref.py, resolve_config)
  "comment"     optional: why the case is as it is (a seed chosen for a margin, a block count)

Same format as tests/golden (tools/python/reference/make_golden.py, whose write_case it uses): for
each case <case>/checkpoint.{safetensors,pt}, config.json and, for each T in {1, 7, n/2+1, n},
ids_<T>.txt and out_<T>.npy (float32, computed in float64); every other file of the folder but
case.json is removed first. OUT_DIR/cases.txt ("<case>\t<checkpoint file>" per line, read by
tests/common/golden_cases.h and the checkers) is generated too, from OUT_DIR's case folders: never
edit it. The kinds' semantics are in docs/converter.md ("Semantics");
tools/python/reference/check_kinds.py checks every case against an independent numpy forward.
"""

import argparse
import json
import os
import re
import shutil
import sys

sys.dont_write_bytecode = True  # keep the source tree clean

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import linfer_ref as lr  # noqa: E402
import make_golden  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
SPECS = os.path.normpath(os.path.join(HERE, "..", "..", "..", "tests", "golden_kinds"))
SPEC_FILE = "case.json"
FORMATS = ("safetensors", "torch")  # make_golden's "bare" needs --config: tests/golden's alone
FIRST_SEED_INDEX = 100  # seed indexes below are tests/golden's (make_golden.CASES)


def fail(message):
    sys.exit("make_kinds_golden.py: " + message)


def read_spec(root, name):
    """The case dict make_golden.write_case takes, from root/name/case.json; fails on a bad one."""
    path = os.path.join(root, name, SPEC_FILE)
    where = os.path.relpath(path)
    # cases.txt is read a word at a time; golden_cases.h takes a name with "bare" for a bare state_dict
    if not re.fullmatch(r"[A-Za-z0-9_.-]+", name) or "bare" in name:
        fail("%s: a case folder's name is letters, digits, _ . - and without \"bare\"" % where)
    if not os.path.isfile(path):
        fail("%s: missing (every case folder holds its case.json)" % where)
    try:
        with open(path) as f:
            spec = json.load(f)
    except (OSError, ValueError) as e:
        fail("%s: %s" % (where, e))
    if not isinstance(spec, dict):
        fail("%s: not a JSON object" % where)
    unknown = sorted(set(spec) - {"format", "explicit", "seed_index", "config", "comment"})
    if unknown:
        fail("%s: unknown key %r" % (where, unknown[0]))
    if spec.get("format") not in FORMATS:
        fail("%s: \"format\" must be one of %s" % (where, ", ".join(FORMATS)))
    if not isinstance(spec.get("explicit", False), bool):
        fail("%s: \"explicit\" must be true or false" % where)
    index = spec.get("seed_index")
    if not isinstance(index, int) or isinstance(index, bool) or index < FIRST_SEED_INDEX:
        fail("%s: \"seed_index\" must be an integer >= %d" % (where, FIRST_SEED_INDEX))
    if not isinstance(spec.get("comment", ""), str):
        fail("%s: \"comment\" must be a string" % where)
    if not isinstance(spec.get("config"), dict):
        fail("%s: \"config\" must be a JSON object" % where)
    try:
        lr.resolve_config(spec["config"])
    except (ValueError, TypeError) as e:
        fail("%s: %s" % (where, e))
    case = dict(name=name, format=spec["format"], config=spec["config"])
    if spec.get("explicit"):
        case["explicit"] = True
    return case, index


def read_specs(root, names):
    """(case, seed_index) of the case folders root/<name>, in the order given."""
    specs = [read_spec(root, name) for name in names]
    seen = {}
    for case, index in specs:
        if index in seen:
            fail("%s and %s have the same seed_index %d (next free: %d)" % (
                seen[index], case["name"], index, max(i for _, i in specs) + 1))
        seen[index] = case["name"]
    return specs


def case_folders(root):
    return sorted(d for d in os.listdir(root) if os.path.isdir(os.path.join(root, d)))


def clear_case(root, name, same_tree):
    """Leaves root/name holding only its case.json: the source's own, or a copy of it."""
    d = os.path.join(root, name)
    if same_tree:
        for entry in os.listdir(d):
            if entry != SPEC_FILE:
                path = os.path.join(d, entry)
                if os.path.isdir(path):
                    shutil.rmtree(path)
                else:
                    os.remove(path)
        return
    if os.path.isdir(d):
        shutil.rmtree(d)
    os.makedirs(d)
    shutil.copyfile(os.path.join(SPECS, name, SPEC_FILE), os.path.join(d, SPEC_FILE))


def write_cases_txt(root, cases):
    """Writes root/cases.txt, "<case>\t<checkpoint file>" per case: generated like the fixtures
    (never edited by hand), for the readers that take a list (tests/common/golden_cases.h,
    check_kinds.py, compare_goldens.py)."""
    with open(os.path.join(root, "cases.txt"), "w") as f:
        f.write("".join("%s\t%s\n" % (case["name"], make_golden.CHECKPOINT_NAME[case["format"]])
                        for case in cases))


def main():
    parser = argparse.ArgumentParser(description="Writes tests/golden_kinds from its case.json files.")
    parser.add_argument("out_dir", nargs="?", default=SPECS, help="default: tests/golden_kinds")
    parser.add_argument("--case", action="append", metavar="NAME",
                        help="rewrite only this case (a folder of tests/golden_kinds); repeatable")
    args = parser.parse_args()
    root = os.path.abspath(args.out_dir)
    specs = read_specs(SPECS, case_folders(SPECS))
    names = [case["name"] for case, _ in specs]
    for name in args.case or []:
        if name not in names:
            fail("--case %s: no folder %s" % (name, os.path.relpath(os.path.join(SPECS, name))))
    write = [(case, index) for case, index in specs if not args.case or case["name"] in args.case]
    same_tree = os.path.realpath(root) == os.path.realpath(SPECS)
    # cases.txt lists OUT_DIR's case folders when done: the ones written and, in another OUT_DIR,
    # the ones already there (checked before anything is written)
    listed = {case["name"]: case for case, _ in write}
    if os.path.isdir(root) and not same_tree:
        kept = [name for name in case_folders(root) if name not in listed]
        listed.update((case["name"], case) for case, _ in read_specs(root, kept))
    elif same_tree:
        listed.update((case["name"], case) for case, _ in specs)
    os.makedirs(root, exist_ok=True)
    for case, index in write:
        clear_case(root, case["name"], same_tree)
        ckpt = make_golden.write_case(root, index, case)
        print("wrote", case["name"], ckpt)
    write_cases_txt(root, [listed[name] for name in sorted(listed)])


if __name__ == "__main__":
    main()
