"""CIFAR-10/100, MNIST, Fashion-MNIST, EMNIST and SVHN read from torchvision's on-disk layout.

The raw files are parsed here (pickled batches, idx(.gz), .mat), not through torchvision's
Dataset classes, so loading needs no PIL round trip; `download: true` calls torchvision's own
downloader into the same layout. md5 sums are torchvision's lists, checked when the cache is
built. Expected layout under the data root:

  cifar-10-batches-py/{data_batch_1..5,test_batch,batches.meta}
  cifar-100-python/{train,test,meta}
  MNIST/raw/, FashionMNIST/raw/   {train,t10k}-{images-idx3,labels-idx1}-ubyte[.gz]
  EMNIST/raw/emnist-<split>-{train,test}-{images-idx3,labels-idx1}-ubyte[.gz]
  {train,test}_32x32.mat          (SVHN)
"""
from __future__ import annotations

import gzip
import pickle
from pathlib import Path

import numpy as np
import torch

from ...core.errors import ConfigError
from .cache import require_files, verify_md5
from .recipes import register_image_dataset

# torchvision's md5 lists (torchvision.datasets.{CIFAR10,CIFAR100,MNIST,FashionMNIST,SVHN}); keyed by
# (dataset, file name). Files without an entry (extracted idx files, EMNIST) have no published sum.
CHECKSUMS: dict[tuple[str, str], str] = {
    ("cifar10", "data_batch_1"): "c99cafc152244af753f735de768cd75f",
    ("cifar10", "data_batch_2"): "d4bba439e000b95fd0a9bffe97cbabec",
    ("cifar10", "data_batch_3"): "54ebc095f3ab1f0389bbae665268c751",
    ("cifar10", "data_batch_4"): "634d18415352ddfa80567beed471001a",
    ("cifar10", "data_batch_5"): "482c414d41f54cd18b22e5b47cb7c3cb",
    ("cifar10", "test_batch"): "40351d587109b95175f43aff81a1287e",
    ("cifar10", "batches.meta"): "5ff9c542aee3614f3951f8cda6e48888",
    ("cifar100", "train"): "16019d7e3df5f24257cddd939b257f8d",
    ("cifar100", "test"): "f0ef6b0ae62326f3e7ffdfab6717acfc",
    ("cifar100", "meta"): "7973b15100ade9c7d40fb424638fde48",
    ("mnist", "train-images-idx3-ubyte.gz"): "f68b3c2dcbeaaa9fbdd348bbdeb94873",
    ("mnist", "train-labels-idx1-ubyte.gz"): "d53e105ee54ea40749a09fcbcd1e9432",
    ("mnist", "t10k-images-idx3-ubyte.gz"): "9fb629c4189551a2d022fa330f9573f3",
    ("mnist", "t10k-labels-idx1-ubyte.gz"): "ec29112dd5afa0611ce80d1b7f02629c",
    ("fmnist", "train-images-idx3-ubyte.gz"): "8d4fb7e6c68d591d4c3dfef9ec88bf0d",
    ("fmnist", "train-labels-idx1-ubyte.gz"): "25c81989df183df01b3e8a0aad5dffbe",
    ("fmnist", "t10k-images-idx3-ubyte.gz"): "bef4ecab320f06d8554ea6380940ec79",
    ("fmnist", "t10k-labels-idx1-ubyte.gz"): "bb300cfdad3c16e7a12a480ee83cd310",
    ("svhn", "train_32x32.mat"): "e26dedcc434d2e4c54c9b2d4a06d8373",
    ("svhn", "test_32x32.mat"): "eb5a983be6a315427106f1b164d9cef3",
}


def _check(dataset: str, path: Path) -> None:
    verify_md5(path, CHECKSUMS.get((dataset, path.name)))


def _download(dataset: str, cls_name: str, root: Path, **kw) -> None:
    """torchvision's downloader into `root`; any failure becomes one ConfigError line."""
    import torchvision.datasets as tvd

    cls = getattr(tvd, cls_name)
    try:
        for split_kw in kw.pop("splits"):
            cls(str(root), download=True, **split_kw, **kw)
    except Exception as exc:
        raise ConfigError(f"dataset {dataset}: download into {root} failed ({type(exc).__name__}: {exc}); "
                          f"place the files there by hand or set download: false") from None


# ------------------------------------------------------------------------------------------- CIFAR
class _NumpyOnlyUnpickler(pickle.Unpickler):
    """CIFAR batches hold dicts, lists, bytes and numpy arrays; refuse anything else."""

    ALLOWED = {("numpy", "ndarray"), ("numpy", "dtype"), ("numpy.core.multiarray", "_reconstruct"),
               ("numpy._core.multiarray", "_reconstruct"), ("numpy.core.multiarray", "scalar"),
               ("numpy._core.multiarray", "scalar"), ("_codecs", "encode")}

    def find_class(self, module, name):
        if (module, name) not in self.ALLOWED:
            raise pickle.UnpicklingError(f"refusing to load {module}.{name} from a data file")
        return super().find_class(module, name)


def _unpickle(path: Path) -> dict:
    with open(path, "rb") as fh:
        try:
            return _NumpyOnlyUnpickler(fh, encoding="latin1").load()
        except Exception as exc:
            raise ConfigError(f"cannot read {path} as a CIFAR pickled batch ({type(exc).__name__}: {exc})") from None


def _cifar_decoder(dataset: str, folder: str, train: list[str], test: list[str], meta: str,
                   label_key: str, cls_name: str):
    def decoder(root: Path, download: bool):
        d = root / folder
        names = train + test + [meta]
        if download and not all((d / n).exists() for n in names):
            _download(dataset, cls_name, root, splits=[{"train": True}, {"train": False}])
        paths = require_files(dataset, d, names, hint=f"expected torchvision's {folder}/ (set download: true to fetch)")

        def build():
            for p in paths:
                _check(dataset, p)

            def read(files):
                xs, ys = [], []
                for n in files:
                    e = _unpickle(d / n)
                    xs.append(np.asarray(e["data"], dtype=np.uint8).reshape(-1, 3, 32, 32))
                    ys.append(np.asarray(e[label_key], dtype=np.int64))
                return torch.from_numpy(np.concatenate(xs)), torch.from_numpy(np.concatenate(ys))

            trx, try_ = read(train)
            tex, tey = read(test)
            return {"train_x": trx, "train_y": try_, "test_x": tex, "test_y": tey}

        return paths, build

    return decoder


# FedNSAM's statistics (CIFAR-10's, also used for CIFAR-100: FedNSAM's code; the paper states no augmentation).
CIFAR_MEAN, CIFAR_STD = (0.4914, 0.4822, 0.4465), (0.2023, 0.1994, 0.2010)
_IMAGE_VARIANTS = {"plain": "plain", "cutout": "crop-flip-cutout", "half": "half"}

register_image_dataset(
    "cifar10", 10,
    _cifar_decoder("cifar10", "cifar-10-batches-py", [f"data_batch_{i}" for i in range(1, 6)], ["test_batch"],
                   "batches.meta", "labels", "CIFAR10"),
    CIFAR_MEAN, CIFAR_STD, "crop-flip", _IMAGE_VARIANTS, "CIFAR-10 (torchvision layout)")
register_image_dataset(
    "cifar100", 100,
    _cifar_decoder("cifar100", "cifar-100-python", ["train"], ["test"], "meta", "fine_labels", "CIFAR100"),
    CIFAR_MEAN, CIFAR_STD, "crop-flip", _IMAGE_VARIANTS, "CIFAR-100 fine labels (torchvision layout)")


# --------------------------------------------------------------------------------------------- idx
def read_idx(path: Path) -> np.ndarray:
    """An idx file (LeCun's MNIST format), optionally gzip-compressed: big-endian dims, then data."""
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rb") as fh:
        raw = fh.read()
    if len(raw) < 4 or raw[0] != 0 or raw[1] != 0 or raw[2] != 0x08:
        raise ConfigError(f"{path} is not an unsigned-byte idx file (bad magic number)")
    ndim = raw[3]
    dims = np.frombuffer(raw, dtype=">u4", count=ndim, offset=4).astype(np.int64)
    data = np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndim)
    if data.size != int(np.prod(dims)):
        raise ConfigError(f"{path} is truncated: header says {tuple(dims)}, found {data.size} bytes")
    return data.reshape(tuple(dims)).copy()  # frombuffer is read-only


def _idx_file(raw: Path, stem: str) -> Path:
    """Prefer the .gz (it carries torchvision's md5); fall back to the extracted file."""
    gz = raw / f"{stem}.gz"
    return gz if gz.exists() else raw / stem


def _idx_decoder(dataset: str, folder: str, prefix: dict[str, str], cls_name: str, transpose: bool = False,
                 label_map=None, split_kw=None):
    def decoder(root: Path, download: bool):
        raw = root / folder / "raw"
        stems = [f"{prefix[s]}-{k}-ubyte" for s in ("train", "test") for k in ("images-idx3", "labels-idx1")]
        if download and not all((raw / s).exists() or (raw / f"{s}.gz").exists() for s in stems):
            _download(dataset, cls_name, root, splits=[{"train": True}, {"train": False}], **(split_kw or {}))
        missing = [f"{s}[.gz]" for s in stems if not ((raw / s).exists() or (raw / f"{s}.gz").exists())]
        if missing:
            raise ConfigError(f"dataset {dataset}: missing {', '.join(missing)} in {raw}; expected torchvision's "
                              f"layout (set download: true to fetch)")
        paths = [_idx_file(raw, s) for s in stems]

        def build():
            for p in paths:
                _check(dataset, p)
            arr = [read_idx(p) for p in paths]
            out = {}
            for i, split in enumerate(("train", "test")):
                x, y = arr[2 * i], arr[2 * i + 1].astype(np.int64)
                if len(x) != len(y):
                    raise ConfigError(f"dataset {dataset}: {len(x)} images but {len(y)} labels in {raw}")
                if transpose:  # EMNIST stores images transposed
                    x = x.transpose(0, 2, 1)
                if label_map is not None:
                    x, y = label_map(x, y)
                out[f"{split}_x"] = torch.from_numpy(np.ascontiguousarray(x)[:, None])
                out[f"{split}_y"] = torch.from_numpy(y)
            return out

        return paths, build

    return decoder


_MNIST_PREFIX = {"train": "train", "test": "t10k"}
_GRAY_VARIANTS = {"aug": "crop-flip", "cutout": "crop-flip-cutout"}

register_image_dataset("mnist", 10, _idx_decoder("mnist", "MNIST", _MNIST_PREFIX, "MNIST"),
                       (0.1307,), (0.3081,), "plain", _GRAY_VARIANTS, "MNIST (torchvision layout)")
register_image_dataset("fmnist", 10, _idx_decoder("fmnist", "FashionMNIST", _MNIST_PREFIX, "FashionMNIST"),
                       (0.2860,), (0.3530,), "plain", _GRAY_VARIANTS, "Fashion-MNIST (torchvision layout)")


def _letters_first(k: int):
    """EMNIST letters labels are 1..26; keep the first k letters as classes 0..k-1 (k=10: FedDyn/FedSAGD EMNIST-L)."""
    def f(x, y):
        keep = (y >= 1) & (y <= k)
        return x[keep], y[keep] - 1
    return f


_EMNIST = {  # name -> (torchvision split, classes, label map)
    "emnist-letters": ("letters", 26, _letters_first(26)),
    "emnist-l10": ("letters", 10, _letters_first(10)),
    "emnist-digits": ("digits", 10, None),
    "emnist-balanced": ("balanced", 47, None),
    "emnist-byclass": ("byclass", 62, None),
}
for _name, (_split, _k, _map) in _EMNIST.items():
    register_image_dataset(
        _name, _k,
        _idx_decoder(_name, "EMNIST", {"train": f"emnist-{_split}-train", "test": f"emnist-{_split}-test"},
                     "EMNIST", transpose=True, label_map=_map, split_kw={"split": _split}),
        None, None, "plain", {}, f"EMNIST {_split} (torchvision layout)")


# -------------------------------------------------------------------------------------------- SVHN
def _svhn_decoder(root: Path, download: bool):
    names = ["train_32x32.mat", "test_32x32.mat"]
    if download and not all((root / n).exists() for n in names):
        _download("svhn", "SVHN", root, splits=[{"split": "train"}, {"split": "test"}])
    paths = require_files("svhn", root, names, hint="expected torchvision's SVHN files (set download: true to fetch)")

    def build():
        import scipy.io as sio

        out = {}
        for split, p in zip(("train", "test"), paths):
            _check("svhn", p)
            m = sio.loadmat(str(p))
            x = np.ascontiguousarray(m["X"].transpose(3, 2, 0, 1)).astype(np.uint8)  # (32,32,3,N) -> NCHW
            y = m["y"].astype(np.int64).reshape(-1) % 10  # label 10 is digit 0
            out[f"{split}_x"], out[f"{split}_y"] = torch.from_numpy(x), torch.from_numpy(y)
        return out

    return paths, build


register_image_dataset("svhn", 10, _svhn_decoder, (0.4377, 0.4438, 0.4728), (0.1980, 0.2010, 0.1970),
                       "crop-flip", {"plain": "plain"}, "SVHN cropped digits, train/test (torchvision layout)")
