"""CINIC-10 and Tiny-ImageNet from their image folders, decoded once with PIL into uint8 tensors.

  <root>/cinic10/{train,test}/<class>/*.png        (the official archive's layout; `valid` unused)
  <root>/tiny-imagenet-200/wnids.txt
  <root>/tiny-imagenet-200/train/<wnid>/images/*.JPEG
  <root>/tiny-imagenet-200/val/images/*.JPEG + val/val_annotations.txt   (used as the test split)

Classes are numbered in sorted folder-name order (torchvision ImageFolder's convention). Neither
archive ships per-file checksums, so none are checked; images of the wrong size are an error.
"""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import torch

from ...core.errors import ConfigError
from .cache import require_files
from .recipes import register_image_dataset

IMAGE_EXTS = {".png", ".jpg", ".jpeg", ".bmp"}
DECODE_THREADS = 8


def _no_download(dataset: str, url: str):
    raise ConfigError(f"dataset {dataset}: no downloader available; fetch it from {url} and unpack under the data root")


def decode_images(paths: list[Path], size: tuple[int, int]) -> torch.Tensor:
    """(N, 3, H, W) uint8 from image files; every image must already be H x W."""
    from PIL import Image

    def one(p: Path) -> np.ndarray:
        with Image.open(p) as im:
            a = np.asarray(im.convert("RGB"))
        if a.shape[:2] != size:
            raise ConfigError(f"image {p} is {a.shape[1]}x{a.shape[0]}, expected {size[1]}x{size[0]}")
        return a

    out = np.empty((len(paths), size[0], size[1], 3), dtype=np.uint8)
    with ThreadPoolExecutor(DECODE_THREADS) as pool:
        for i, a in enumerate(pool.map(one, paths)):
            out[i] = a
    return torch.from_numpy(out).permute(0, 3, 1, 2).contiguous()


def _images_in(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir() if p.suffix.lower() in IMAGE_EXTS)


def scan_class_folders(split_dir: Path, classes: list[str], sub: str = "") -> tuple[list[Path], np.ndarray]:
    files, labels = [], []
    for k, c in enumerate(classes):
        imgs = _images_in(split_dir / c / sub if sub else split_dir / c)
        files += imgs
        labels += [k] * len(imgs)
    return files, np.asarray(labels, dtype=np.int64)


# ----------------------------------------------------------------------------------------- CINIC-10
CINIC_CLASSES = ["airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck"]
CINIC_URL = "https://datashare.ed.ac.uk/handle/10283/3192"


def _cinic_decoder(root: Path, download: bool):
    base = root / "cinic10"
    if download and not base.exists():
        _no_download("cinic10", CINIC_URL)
    for split in ("train", "test"):
        require_files("cinic10", base / split, CINIC_CLASSES, hint=f"expected class folders of the archive from {CINIC_URL}")
    # the fingerprint covers the folders (their mtime changes when files are added or removed)
    sources = [base / s / c for s in ("train", "test") for c in CINIC_CLASSES]

    def build():
        out = {}
        for split in ("train", "test"):
            files, y = scan_class_folders(base / split, CINIC_CLASSES)
            if not files:
                raise ConfigError(f"dataset cinic10: no images under {base / split}")
            out[f"{split}_x"], out[f"{split}_y"] = decode_images(files, (32, 32)), torch.from_numpy(y)
        return out

    return sources, build


# official CINIC-10 statistics (BayesWatch/cinic-10 README)
register_image_dataset("cinic10", 10, _cinic_decoder, (0.47889522, 0.47227842, 0.43047404),
                       (0.24205776, 0.23828046, 0.25874835), "crop-flip-reflect",
                       {"plain": "plain", "constant": "crop-flip"}, "CINIC-10 train/test image folders")


# ------------------------------------------------------------------------------------ Tiny-ImageNet
TINY_URL = "http://cs231n.stanford.edu/tiny-imagenet-200.zip"
IMAGENET_MEAN, IMAGENET_STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)


def _tiny_decoder(root: Path, download: bool):
    base = root / "tiny-imagenet-200"
    if download and not base.exists():
        _no_download("tiny_imagenet", TINY_URL)
    wnids_file, ann = require_files("tiny_imagenet", base, ["wnids.txt", "val/val_annotations.txt"],
                                    hint=f"expected the unpacked {TINY_URL}")
    wnids = sorted(w.strip() for w in wnids_file.read_text().split() if w.strip())
    require_files("tiny_imagenet", base / "train", wnids)
    sources = [wnids_file, ann] + [base / "train" / w / "images" for w in wnids] + [base / "val" / "images"]

    def build():
        files, y = scan_class_folders(base / "train", wnids, sub="images")
        index = {w: k for k, w in enumerate(wnids)}
        vfiles, vy = [], []
        for line in ann.read_text().splitlines():
            parts = line.split("\t")
            if len(parts) < 2:
                continue
            if parts[1] not in index:
                raise ConfigError(f"{ann}: unknown class {parts[1]!r} for {parts[0]}")
            vfiles.append(base / "val" / "images" / parts[0])
            vy.append(index[parts[1]])
        return {"train_x": decode_images(files, (64, 64)), "train_y": torch.from_numpy(y),
                "test_x": decode_images(vfiles, (64, 64)), "test_y": torch.tensor(vy, dtype=torch.int64)}

    return sources, build


register_image_dataset("tiny_imagenet", 200, _tiny_decoder, IMAGENET_MEAN, IMAGENET_STD, "plain",
                       {"aug": "crop-flip"}, "Tiny-ImageNet-200 (val split used as test)")
