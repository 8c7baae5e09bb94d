"""Writers for tiny files in each dataset's true on-disk format (used by the loader tests)."""
from __future__ import annotations

import gzip
import pickle
import struct
from pathlib import Path

import numpy as np


def idx_bytes(arr: np.ndarray) -> bytes:
    head = bytes([0, 0, 0x08, arr.ndim]) + struct.pack(">" + "I" * arr.ndim, *arr.shape)
    return head + np.ascontiguousarray(arr, dtype=np.uint8).tobytes()


def write_idx(path: Path, arr: np.ndarray, gz: bool) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    data = idx_bytes(arr)
    if gz:
        path = path.with_name(path.name + ".gz")
        with gzip.open(path, "wb") as fh:
            fh.write(data)
    else:
        path.write_bytes(data)
    return path


def write_mnist_like(raw: Path, prefix_train: str, prefix_test: str, xtr, ytr, xte, yte, gz=True) -> None:
    write_idx(raw / f"{prefix_train}-images-idx3-ubyte", xtr, gz)
    write_idx(raw / f"{prefix_train}-labels-idx1-ubyte", ytr, gz)
    write_idx(raw / f"{prefix_test}-images-idx3-ubyte", xte, gz)
    write_idx(raw / f"{prefix_test}-labels-idx1-ubyte", yte, gz)


def write_cifar_batch(path: Path, x_nchw: np.ndarray, labels, label_key: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    entry = {"batch_label": "tiny", label_key: list(map(int, labels)),
             "data": x_nchw.reshape(len(x_nchw), -1).astype(np.uint8), "filenames": [f"{i}.png" for i in range(len(x_nchw))]}
    with open(path, "wb") as fh:
        pickle.dump(entry, fh, protocol=2)


def write_cifar_meta(path: Path, key: str, names: list[str]) -> None:
    with open(path, "wb") as fh:
        pickle.dump({key: names, "num_cases_per_batch": 10000, "num_vis": 3072}, fh, protocol=2)


def write_png(path: Path, arr_hwc: np.ndarray, fmt: str = "PNG") -> None:
    from PIL import Image

    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(arr_hwc).save(path, format=fmt, **({"quality": 100} if fmt == "JPEG" else {}))


PLAY_TEXT = """THE SONNETS

by William Shakespeare

  From fairest creatures we desire increase. That thereby beauty's rose

1603

THE TRAGEDY OF TINY

by William Shakespeare

ACT I. SCENE I.

  ALPHA. First words of alpha, spoken clearly to the crowd.
    And alpha continues speaking on this second line here.
  BETA. Beta answers: "quick & brown" foxes (jump) over 12 lazy dogs!
    Beta goes on; at length; with more words~ than needed.

                     Enter GAMMA

  ALPHA. Alpha again, a third time, to make enough characters.
  BETA. Beta replies once more with another long line of text.
""" + "".join(
    f"  ALPHA. Speech number {i} of alpha, long enough to fill several windows of text.\n"
    f"    It carries on for a while, line {i}, so the test split has windows too.\n"
    f"  BETA. Beta's answer {i}: no, yes; perhaps (or not) -- who can tell?\n"
    for i in range(12))
