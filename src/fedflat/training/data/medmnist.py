"""PathMNIST and TissueMNIST (MedMNIST v2, 28x28) from the official `.npz` files.

  <root>/medmnist/pathmnist.npz, <root>/medmnist/tissuemnist.npz
  keys: {train,val,test}_images (N,28,28[,3]) uint8, {train,val,test}_labels (N,1)

FedSOL trains on train+val concatenated (PathMNIST 100,000; TissueMNIST 189,106; FedSOL App. B.2
prints 110,000 for PathMNIST, which train+val does not give) and tests on `test`; the `-trainonly` variants keep MedMNIST's train split alone.
md5 sums are MedMNIST v2's published ones (medmnist/info.py); `download: true` fetches from
Zenodo through torchvision's `download_url`, which checks the same md5.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from ...core.errors import ConfigError
from .cache import require_files, verify_md5
from .recipes import register_image_dataset

MEDMNIST = {  # name -> (classes, md5, url)
    "pathmnist": (9, "a8b06965200029087d5bd730944a56c1", "https://zenodo.org/record/6496656/files/pathmnist.npz?download=1"),
    "tissuemnist": (8, "ebe78ee8b05294063de985d821c1c34b", "https://zenodo.org/record/6496656/files/tissuemnist.npz?download=1"),
}
CHECKSUMS = {name: md5 for name, (_, md5, _) in MEDMNIST.items()}
KEYS = [f"{s}_{k}" for s in ("train", "val", "test") for k in ("images", "labels")]


def _decoder(name: str, with_val: bool):
    def decoder(root: Path, download: bool):
        folder = root / "medmnist"
        fname = f"{name}.npz"
        if download and not (folder / fname).exists():
            from torchvision.datasets.utils import download_url

            try:
                download_url(MEDMNIST[name][2], str(folder), filename=fname, md5=CHECKSUMS[name])
            except Exception as exc:
                raise ConfigError(f"dataset {name}: download into {folder} failed ({type(exc).__name__}: {exc})") from None
        (path,) = require_files(name, folder, [fname], hint="expected MedMNIST v2's 28x28 npz (set download: true to fetch)")

        def build():
            verify_md5(path, CHECKSUMS.get(name))
            with np.load(path, allow_pickle=False) as z:
                missing = [k for k in KEYS if k not in z.files]
                if missing:
                    raise ConfigError(f"{path}: not a MedMNIST npz, missing keys {', '.join(missing)}")
                arr = {k: z[k] for k in KEYS}

            def imgs(a):
                a = np.asarray(a, dtype=np.uint8)
                return torch.from_numpy(np.ascontiguousarray(a[:, None] if a.ndim == 3 else a.transpose(0, 3, 1, 2)))

            def labels(a):
                return torch.from_numpy(np.asarray(a).reshape(-1).astype(np.int64))

            train = ("train", "val") if with_val else ("train",)
            return {"train_x": torch.cat([imgs(arr[f"{s}_images"]) for s in train]),
                    "train_y": torch.cat([labels(arr[f"{s}_labels"]) for s in train]),
                    "test_x": imgs(arr["test_images"]), "test_y": labels(arr["test_labels"])}

        return [path], build

    return decoder


for _name, (_k, _md5, _url) in MEDMNIST.items():
    # FedSOL: RandomHorizontalFlip + Normalize(0.5, 0.5) (FedSOL App. B.2)
    _c = 3 if _name == "pathmnist" else 1
    register_image_dataset(_name, _k, _decoder(_name, True), (0.5,) * _c, (0.5,) * _c, "flip",
                           {"plain": "plain"}, f"MedMNIST v2 {_name}, train+val / test")
    register_image_dataset(f"{_name}-trainonly", _k, _decoder(_name, False), (0.5,) * _c, (0.5,) * _c, "flip",
                           {}, f"MedMNIST v2 {_name}, train / test", cache_name=f"{_name}-trainonly")
