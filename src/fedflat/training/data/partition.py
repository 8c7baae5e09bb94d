"""Client partitioners. One function per scheme: partition(labels, num_clients, rng, **params).

A partition spec is a short canonical string so it can be a path component:

  iid                    uniform random split, equal sizes
  dir{a}-rep             Dirichlet(a), balanced sizes, class pools refilled when exhausted
                         (samples may repeat across clients): FedNSAM / FL-Simulator
  dir{a}-norep           Dirichlet(a), balanced sizes, without replacement: FedACG
  dir{a}-lda             per-class Dirichlet(a) over clients, unbalanced, minimum size 10,
                         re-drawn until met: NIID-Bench / FedSOL / flwr-datasets
  shards{c}              sort by label, cut into N*c shards, c shards per client (McMahan et al.);
                         two shards may hold the same class: often fewer than c classes
  path{c}                pathological: every client gets exactly c distinct classes, drawn uniformly
                         at random per client, in equal shares, balanced sizes, class pools refilled
                         when exhausted (samples may repeat across clients): FL-Simulator / FedDyn
                         DatasetObject's `Pathological` rule (FedTOGA, FedSMOO, FedLESAM)
  natural                one client per natural group of the data set (Shakespeare roles)

`dir{a}` without a variant takes the config's default variant.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

from ...core.errors import ConfigError
from ...core.registry import Registry
from ...core.util.io import atomic_write

PARTITIONERS: Registry[Callable[..., list[np.ndarray]]] = Registry("partition")
DIRICHLET_VARIANTS = ("rep", "norep", "lda")
LDA_MIN_SIZE = 10
LDA_MAX_TRIES = 200_000  # the official code retries without bound; dir0.05 over 100 CIFAR-10 clients needs ~1e4-6e4

_SPEC = re.compile(r"^(?:(iid)|dir(?P<alpha>[0-9.eE+-]+)(?:-(?P<variant>[a-z]+))?|shards(?P<shards>[0-9]+)"
                   r"|path(?P<path>[0-9]+))$")


def parse_partition(spec: str, default_variant: str = "rep") -> tuple[str, dict]:
    """'dir0.1' -> ('dirichlet', {'alpha': 0.1, 'variant': 'rep'}); raises ConfigError on bad specs."""
    if spec == "natural":  # clients given by the data (Shakespeare roles), see data.natural
        return "natural", {}
    m = _SPEC.match(str(spec))
    if not m:
        raise ConfigError(
            f"partition: cannot parse {spec!r}; allowed forms: iid, dir<alpha>[-rep|-norep|-lda], shards<c>, path<c>, natural"
        )
    if m.group(1):
        return "iid", {}
    if m.group("shards") is not None:
        c = int(m.group("shards"))
        if c < 1:
            raise ConfigError(f"partition: {spec!r} needs at least 1 shard per client")
        return "shards", {"shards_per_client": c}
    if m.group("path") is not None:
        c = int(m.group("path"))
        if c < 1:
            raise ConfigError(f"partition: {spec!r} needs at least 1 class per client")
        return "path", {"classes_per_client": c}
    try:
        alpha = float(m.group("alpha"))
    except ValueError:
        raise ConfigError(f"partition: {spec!r} has a non-numeric alpha") from None
    if not alpha > 0 or not np.isfinite(alpha):
        raise ConfigError(f"partition: alpha must be > 0 in {spec!r}")
    variant = m.group("variant") or default_variant
    if variant not in DIRICHLET_VARIANTS:
        raise ConfigError(f"partition: variant {variant!r} in {spec!r}; allowed: {', '.join(DIRICHLET_VARIANTS)}")
    return "dirichlet", {"alpha": alpha, "variant": variant}


def canonical_partition(spec: str, default_variant: str = "rep") -> str:
    kind, p = parse_partition(spec, default_variant)
    if kind == "dirichlet":
        return f"dir{p['alpha']:g}-{p['variant']}"
    if kind == "path":
        return f"path{p['classes_per_client']}"
    return str(spec)


@PARTITIONERS.register("iid")
def iid(labels: np.ndarray, num_clients: int, rng: np.random.Generator) -> list[np.ndarray]:
    return [np.sort(a) for a in np.array_split(rng.permutation(len(labels)), num_clients)]


@PARTITIONERS.register("shards")
def shards(labels, num_clients, rng, shards_per_client: int) -> list[np.ndarray]:
    n_shards = num_clients * shards_per_client
    if n_shards > len(labels):
        raise ConfigError(f"partition: {n_shards} shards requested but only {len(labels)} samples")
    order = np.argsort(labels, kind="stable")
    pieces = np.array_split(order, n_shards)
    assign = rng.permutation(n_shards).reshape(num_clients, shards_per_client)
    return [np.sort(np.concatenate([pieces[s] for s in row])) for row in assign]


@PARTITIONERS.register("path")
def pathological(labels, num_clients, rng, classes_per_client: int, standin: bool = False,
                 samples_per_client: int | None = None) -> list[np.ndarray]:
    """Each client: c distinct classes drawn uniformly at random (independently per client, so with
    N*c < K or by chance some classes go unused), n//N samples split as evenly as possible among them.

    The lineage draws each sample's class from the client's uniform prior over its c classes
    (multinomial shares); equal shares are that prior's expectation and guarantee exactly c classes.
    A class pool that runs out is refilled with a fresh permutation of the class, as the lineage does,
    so an over-demanded class repeats samples across clients (within a client only if its share exceeds
    the class).
    On a stand-in data set with fewer classes than c (tiny scale: 10 digits for CIFAR-100's c = 20)
    every client gets all its classes; elsewhere c > classes is a ConfigError."""
    classes = np.flatnonzero(np.bincount(labels))
    c = classes_per_client
    if c > len(classes):
        if not standin:
            raise ConfigError(f"partition: path{c} asks for {c} classes per client but the data set has {len(classes)}")
        c = len(classes)
    n = samples_per_client or len(labels) // num_clients
    if n < c:
        raise ConfigError(f"partition: path{classes_per_client} needs >= {c} samples per client, got {n}")
    members = {k: np.flatnonzero(labels == k) for k in classes}
    pools = {k: rng.permutation(v) for k, v in members.items()}
    out = []
    for _ in range(num_clients):
        chosen = rng.choice(classes, size=c, replace=False)
        shares = np.full(c, n // c)
        shares[rng.choice(c, size=n % c, replace=False)] += 1
        picked = [_take(pools, members, k, m, rng) for k, m in zip(chosen, shares)]
        out.append(np.sort(np.concatenate(picked)).astype(np.int64))
    return out


def _take(pools: dict, members: dict, k, m: int, rng) -> np.ndarray:
    """m samples of class k from its pool. An exhausted pool is refilled with a fresh permutation of the
    class whose last entries are the samples this client already took, so a client repeats none unless
    its share exceeds the class."""
    took, need = [], m
    while need:
        if not len(pools[k]):
            held = np.concatenate(took) if took else members[k][:0]
            pools[k] = np.concatenate([rng.permutation(np.setdiff1d(members[k], held)), rng.permutation(held)])
        part, pools[k] = pools[k][:need], pools[k][need:]
        took.append(part)
        need -= len(part)
    return np.concatenate(took)


@PARTITIONERS.register("dirichlet")
def dirichlet(labels, num_clients, rng, alpha: float, variant: str, samples_per_client: int | None = None):
    num_classes = int(labels.max()) + 1
    if variant == "lda":
        return _dirichlet_lda(labels, num_clients, rng, alpha, num_classes)
    n = samples_per_client or len(labels) // num_clients
    if variant == "norep" and n * num_clients > len(labels):
        raise ConfigError(f"partition: {num_clients} x {n} samples exceed the {len(labels)} available without replacement")
    pools = [rng.permutation(np.flatnonzero(labels == c)).tolist() for c in range(num_classes)]
    fresh = [list(p) for p in pools]  # refill source for the with-replacement variant
    out = []
    for _ in range(num_clients):
        p = rng.dirichlet(alpha * np.ones(num_classes))
        picked = []
        for _s in range(n):
            if variant == "norep":
                avail = np.array([len(q) > 0 for q in pools], dtype=float)
                w = p * avail
                # a client whose classes are exhausted falls back to the remaining classes uniformly
                w = w / w.sum() if w.sum() > 0 else avail / avail.sum()
                c = rng.choice(num_classes, p=w)
            else:
                c = rng.choice(num_classes, p=p)
                if not pools[c]:
                    pools[c] = rng.permutation(fresh[c]).tolist()
            picked.append(pools[c].pop())
        out.append(np.sort(np.asarray(picked, dtype=np.int64)))
    return out


def _dirichlet_lda(labels, num_clients, rng, alpha, num_classes):
    """Re-drawn until every client holds LDA_MIN_SIZE samples, as the official FedNTD/FedSOL code (which loops
    without bound): at α=0.05 with 100 CIFAR-10 clients that takes ~1e4-6e4 draws. A draw only counts sizes;
    the buckets are built once, from the accepted draw (same random stream as building them every time)."""
    n = len(labels)
    min_size = min(LDA_MIN_SIZE, n // num_clients)
    by_class = [np.flatnonzero(labels == c) for c in range(num_classes)]
    for _ in range(LDA_MAX_TRIES):
        sizes = np.zeros(num_clients, dtype=np.int64)
        draws = []
        for members in by_class:
            idx = rng.permutation(members)
            p = rng.dirichlet(alpha * np.ones(num_clients))
            # NIID-Bench balancing: a client already holding >= n/N samples gets no more
            p = np.where(sizes >= n / num_clients, 0.0, p)
            p = p / p.sum() if p.sum() > 0 else np.ones(num_clients) / num_clients
            cuts = (np.cumsum(p) * len(idx)).astype(int)[:-1]
            sizes += np.diff(np.concatenate(([0], cuts, [len(idx)])))
            draws.append((idx, cuts))
        if sizes.min() >= min_size:
            parts = [np.split(idx, cuts) for idx, cuts in draws]
            return [np.sort(np.concatenate([pc[k] for pc in parts])).astype(np.int64) for k in range(num_clients)]
    raise ConfigError(f"partition: dir{alpha}-lda could not give every client {min_size} samples in {LDA_MAX_TRIES} tries")


# What to do about a bad partition file, as a user can do it: a partition is seeded, so regenerating it gives the
# same clients, and the workflow's rules take it as `ancient` (runs already trained on it are not redone). Delete
# first: the workflow refuses to start while a corrupted partition file exists (check_existing).
SNAKEMAKE = "snakemake --cores 1 {path}"


def regenerate(path, command: str = SNAKEMAKE) -> str:
    """The advice; `command` is the Snakemake command line with {path} where the partition file goes."""
    line = command.replace("{path}", str(path))
    return (f"delete it, then regenerate it alone with `{line}` (seeded: the same clients; runs already trained on it "
            f"keep their outputs)")


@dataclass
class Partition:
    clients: list[np.ndarray]
    histogram: np.ndarray  # (num_clients, num_classes) label counts
    meta: dict

    @property
    def num_clients(self) -> int:
        return len(self.clients)

    def save(self, path: str | Path) -> None:
        sizes = np.array([len(c) for c in self.clients], dtype=np.int64)
        flat = np.concatenate(self.clients) if self.clients else np.zeros(0, np.int64)

        def write(tmp: Path):
            with open(tmp, "wb") as fh:
                np.savez(fh, indices=flat, sizes=sizes, histogram=self.histogram, meta=json.dumps(self.meta))

        atomic_write(Path(path), write)

    @classmethod
    def load(cls, path: str | Path, num_samples: int | None = None, command: str = SNAKEMAKE) -> "Partition":
        """The partition saved at `path`, its indices checked (check_indices); `num_samples`: the size of the
        training split they index (else the size the file records); `command`: how the advice regenerates it."""
        path = Path(path)
        advice = regenerate(path, command)
        if not path.exists():
            raise ConfigError(f"partition file missing: {path}")
        try:
            with np.load(path, allow_pickle=False) as z:
                flat, sizes, hist, meta = z["indices"], z["sizes"], z["histogram"], json.loads(str(z["meta"]))
        except Exception as exc:  # corrupted or truncated file: name it, do not guess
            raise ConfigError(f"partition file {path} is corrupted or truncated ({type(exc).__name__}); "
                              f"{advice}") from None
        if not isinstance(meta, dict) or flat.ndim != 1 or sizes.ndim != 1 or hist.ndim != 2 \
                or sizes.sum() != len(flat) or hist.shape[0] != len(sizes):
            raise ConfigError(f"partition file {path} is inconsistent (sizes vs indices); {advice}")
        check_indices(flat, sizes, meta, num_samples, path, advice)
        return cls(list(np.split(flat, np.cumsum(sizes)[:-1])), hist, meta)


# schemes that draw every sample at most once over the federation (the -rep Dirichlet and path{c} schemes refill
# exhausted class pools, so their clients may share samples)
_WITHOUT_REPEATS = {"iid", "shards", "natural"}


def check_indices(flat: np.ndarray, sizes: np.ndarray, meta: dict, num_samples: int | None, path,
                  advice: str = "") -> None:
    """A partition's indices: integers, non-negative, below the training split's size, and, for schemes that draw
    without replacement, each sample in one client only; a ConfigError naming the file and client otherwise (a
    negative index would silently train on samples counted from the end)."""
    where = f"partition file {path}"
    if len(flat) and not np.issubdtype(flat.dtype, np.integer):
        raise ConfigError(f"{where}: indices are {flat.dtype}, not integers; {advice}")
    if np.any(sizes < 0):
        raise ConfigError(f"{where}: a client has a negative size; {advice}")
    owner = np.repeat(np.arange(len(sizes)), sizes)
    n = num_samples if num_samples is not None else meta.get("num_samples")
    outside = flat < 0
    if isinstance(n, int):
        outside |= flat >= n
    bad = np.flatnonzero(outside)
    if len(bad):
        i = bad[0]
        raise ConfigError(f"{where}: client {owner[i]} holds index {flat[i]}, outside 0..{'?' if n is None else n - 1} "
                          f"of the training split; {advice}")
    kind, variant = meta.get("kind"), (meta.get("params") or {}).get("variant")
    if kind in _WITHOUT_REPEATS or (kind == "dirichlet" and variant in ("norep", "lda")):
        values, counts = np.unique(flat, return_counts=True)
        if len(values) != len(flat):
            dup = values[np.argmax(counts > 1)]
            raise ConfigError(f"{where}: sample {dup} is listed twice, which scheme {meta.get('spec')!r} never does; "
                              f"{advice}")


def check_existing(paths, command: str = SNAKEMAKE) -> None:
    """Every partition file of `paths` that exists loads and passes check_indices. The workflow runs this at parse
    time (workflow/rules/common.smk, `command` with the study's --configfile): a corrupted partition is refused before
    any job is scheduled, never found by a job after Snakemake has removed the outputs it was to rewrite."""
    for p in paths:
        if Path(p).exists():
            Partition.load(p, command=command)


def make_partition(labels, spec: str, num_clients: int, seed: int, default_variant: str = "rep",
                   samples_per_client: int | None = None, num_classes: int | None = None,
                   standin: bool = False, missing_classes: str = "error") -> Partition:
    """`standin`: the labels are a tiny-scale stand-in's (papers.standins), on which path{c} with c above
    the stand-in's class count gives every client all classes instead of failing. `missing_classes`: a split
    that leaves a class of the data with no sample anywhere in the federation is an error (no test accuracy
    above the share of the other classes is reachable), unless the experiment says `missing_classes: allow`
    or the labels are a stand-in's (few clients at tiny scale: the check is for the real data sets)."""
    labels = np.asarray(labels)
    if num_clients < 1:
        raise ConfigError(f"num_clients: must be >= 1, got {num_clients}")
    if num_clients > len(labels):
        raise ConfigError(f"num_clients: {num_clients} clients exceed the {len(labels)} training samples")
    kind, params = parse_partition(spec, default_variant)
    if kind in ("dirichlet", "path"):
        params["samples_per_client"] = samples_per_client
    if kind == "path":
        params["standin"] = standin
    rng = np.random.default_rng([seed, 0x9A27])
    clients = PARTITIONERS.get(kind)(labels, num_clients, rng, **params)
    k = num_classes or int(labels.max()) + 1
    hist = np.stack([np.bincount(labels[c], minlength=k) for c in clients])
    meta = {"spec": canonical_partition(spec, default_variant), "kind": kind, "params": params,
            "num_clients": num_clients, "seed": seed, "num_samples": int(len(labels))}
    absent = [c for c in np.flatnonzero(np.bincount(labels, minlength=k)) if hist[:, c].sum() == 0]
    if absent and missing_classes != "allow" and not standin:  # a tiny-scale stand-in is a smoke test of the DAG
        raise ConfigError(f"partition {meta['spec']} with {num_clients} clients (seed {seed}) leaves class(es) "
                          f"{', '.join(map(str, absent))} with no sample in the federation; set missing_classes: allow "
                          f"in the experiment if that is intended (python -m fedflat.papers --coverage shows coverage)")
    return Partition(clients, hist, meta)
