"""Every file-backed loader, on tiny files written in the dataset's true on-disk format."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.io as sio
import torch

from data_formats import write_cifar_batch, write_cifar_meta, write_mnist_like, write_png
from fedflat.training.data import load_dataset
from fedflat.training.data import medmnist as med
from fedflat.training.data import torchvision_sets as tvs
from fedflat.training.data.cache import CACHE_DIR, md5sum
from fedflat.core.errors import ConfigError

RNG = np.random.default_rng(0)


def _imgs(n, c, h, w):
    return RNG.integers(0, 256, size=(n, c, h, w), dtype=np.uint8)


def _make_cifar10(root):
    d = root / "cifar-10-batches-py"
    xs, ys = [], []
    for i in range(1, 6):
        x, y = _imgs(3, 3, 32, 32), RNG.integers(0, 10, 3)
        write_cifar_batch(d / f"data_batch_{i}", x, y, "labels")
        xs.append(x); ys.append(y)
    xt, yt = _imgs(2, 3, 32, 32), RNG.integers(0, 10, 2)
    write_cifar_batch(d / "test_batch", xt, yt, "labels")
    write_cifar_meta(d / "batches.meta", "label_names", [f"c{i}" for i in range(10)])
    return d, np.concatenate(xs), np.concatenate(ys), xt, yt


@pytest.fixture
def no_md5(monkeypatch):
    monkeypatch.setattr(tvs, "CHECKSUMS", {})
    monkeypatch.setattr(med, "CHECKSUMS", {})


def test_cifar10_pickled_batches_decode_exactly(tmp_path, no_md5):
    _, x, y, xt, yt = _make_cifar10(tmp_path)
    ds = load_dataset("cifar10", tmp_path)
    assert ds.train_x.dtype == torch.uint8 and ds.input_shape == (3, 32, 32) and ds.num_classes == 10
    assert torch.equal(ds.train_x, torch.from_numpy(x)) and torch.equal(ds.train_y, torch.from_numpy(y))
    assert torch.equal(ds.test_x, torch.from_numpy(xt)) and torch.equal(ds.test_y, torch.from_numpy(yt))
    assert torch.allclose(ds.mean, torch.tensor(tvs.CIFAR_MEAN)) and ds.augment is not None
    assert load_dataset("cifar10-plain", tmp_path).augment is None
    assert len(list((tmp_path / CACHE_DIR).glob("cifar10-*.pt"))) == 1  # variants share one cache


def test_cifar100_fine_labels(tmp_path, no_md5):
    d = tmp_path / "cifar-100-python"
    x, y = _imgs(4, 3, 32, 32), np.array([0, 99, 5, 42])
    write_cifar_batch(d / "train", x, y, "fine_labels")
    write_cifar_batch(d / "test", x[:2], y[:2], "fine_labels")
    write_cifar_meta(d / "meta", "fine_label_names", [f"c{i}" for i in range(100)])
    ds = load_dataset("cifar100", tmp_path)
    assert ds.num_classes == 100 and ds.train_y.tolist() == [0, 99, 5, 42]
    assert torch.equal(ds.train_x, torch.from_numpy(x))


def test_md5_checked_and_mismatch_is_one_config_error(tmp_path, monkeypatch):
    d, *_ = _make_cifar10(tmp_path)
    sums = {("cifar10", p.name): md5sum(p) for p in d.iterdir()}
    monkeypatch.setattr(tvs, "CHECKSUMS", sums)
    load_dataset("cifar10", tmp_path)  # correct sums pass
    sums[("cifar10", "test_batch")] = "0" * 32
    import os
    os.utime(d / "test_batch", ns=(1, 1))  # new mtime -> new fingerprint -> rebuilt and re-checked
    with pytest.raises(ConfigError, match=r"checksum mismatch for .*test_batch"):
        load_dataset("cifar10", tmp_path)


def test_cache_reused_then_rebuilt_when_a_source_changes(tmp_path, no_md5, monkeypatch):
    d, *_ = _make_cifar10(tmp_path)
    load_dataset("cifar10", tmp_path)
    calls = []
    real = tvs._unpickle
    monkeypatch.setattr(tvs, "_unpickle", lambda p: calls.append(p) or real(p))
    load_dataset("cifar10", tmp_path)
    assert calls == []  # served from the cache, nothing decoded
    import os
    os.utime(d / "data_batch_1", ns=(10**9, 10**9))
    load_dataset("cifar10", tmp_path)
    assert len(calls) == 6 and len(list((tmp_path / CACHE_DIR).glob("cifar10-*.pt"))) == 1


def test_pickle_with_foreign_objects_is_refused(tmp_path, no_md5):
    import pickle

    d, *_ = _make_cifar10(tmp_path)
    with open(d / "test_batch", "wb") as fh:
        pickle.dump({"data": np.zeros((1, 3072), np.uint8), "labels": [0], "evil": print}, fh, protocol=2)
    with pytest.raises(ConfigError, match=r"refusing to load \w+\.print"):
        load_dataset("cifar10", tmp_path)


def test_missing_files_name_path_and_files(tmp_path):
    with pytest.raises(ConfigError) as e:
        load_dataset("cifar10", tmp_path)
    msg = str(e.value)
    assert "\n" not in msg and str(tmp_path / "cifar-10-batches-py") in msg and "data_batch_1" in msg and "batches.meta" in msg
    with pytest.raises(ConfigError, match=r"t10k-labels-idx1-ubyte\[\.gz\] in .*MNIST/raw"):
        load_dataset("mnist", tmp_path)
    with pytest.raises(ConfigError, match=r"test_32x32\.mat"):
        load_dataset("svhn", tmp_path)
    with pytest.raises(ConfigError, match=r"pathmnist\.npz in .*medmnist"):
        load_dataset("pathmnist", tmp_path)


@pytest.mark.parametrize("gz", [True, False])
def test_mnist_idx_gz_and_extracted(tmp_path, no_md5, gz):
    x, y = RNG.integers(0, 256, (5, 28, 28), dtype=np.uint8), np.array([0, 1, 2, 3, 9], np.uint8)
    write_mnist_like(tmp_path / "MNIST" / "raw", "train", "t10k", x, y, x[:2], y[:2], gz=gz)
    ds = load_dataset("mnist", tmp_path)
    assert ds.input_shape == (1, 28, 28) and torch.equal(ds.train_x[:, 0], torch.from_numpy(x))
    assert ds.train_y.dtype == torch.int64 and ds.train_y.tolist() == [0, 1, 2, 3, 9]
    assert abs(float(ds.mean[0]) - 0.1307) < 1e-6


def test_fmnist_md5_of_gz(tmp_path, monkeypatch):
    x, y = RNG.integers(0, 256, (3, 28, 28), dtype=np.uint8), np.array([1, 2, 3], np.uint8)
    raw = tmp_path / "FashionMNIST" / "raw"
    write_mnist_like(raw, "train", "t10k", x, y, x, y, gz=True)
    monkeypatch.setattr(tvs, "CHECKSUMS", {("fmnist", p.name): md5sum(p) for p in raw.iterdir()})
    assert load_dataset("fmnist", tmp_path).train_y.tolist() == [1, 2, 3]


def test_truncated_idx_is_config_error(tmp_path, no_md5):
    x, y = RNG.integers(0, 256, (3, 28, 28), dtype=np.uint8), np.array([1, 2, 3], np.uint8)
    raw = tmp_path / "MNIST" / "raw"
    write_mnist_like(raw, "train", "t10k", x, y, x, y, gz=False)
    p = raw / "train-images-idx3-ubyte"
    p.write_bytes(p.read_bytes()[:-10])
    with pytest.raises(ConfigError, match="truncated"):
        load_dataset("mnist", tmp_path)


def test_emnist_letters_first_ten_and_transpose(tmp_path, no_md5):
    x = RNG.integers(0, 256, (6, 28, 28), dtype=np.uint8)
    y = np.array([1, 10, 11, 26, 3, 12], np.uint8)  # letters are labelled 1..26
    write_mnist_like(tmp_path / "EMNIST" / "raw", "emnist-letters-train", "emnist-letters-test", x, y, x, y, gz=False)
    l10 = load_dataset("emnist-l10", tmp_path)
    assert l10.num_classes == 10 and l10.train_y.tolist() == [0, 9, 2]
    assert torch.equal(l10.train_x[0, 0], torch.from_numpy(x[0].T))  # EMNIST is stored transposed
    assert torch.allclose(l10.mean, l10.train_x.float().div(255).mean().view(1))  # own statistics (none published)
    assert load_dataset("emnist-letters", tmp_path).train_y.tolist() == [0, 9, 10, 25, 2, 11]


def test_svhn_mat(tmp_path, no_md5):
    x = RNG.integers(0, 256, (32, 32, 3, 4), dtype=np.uint8)  # SVHN's (H, W, C, N) layout
    y = np.array([[10], [1], [9], [10]], np.uint8)  # 10 means digit 0
    sio.savemat(tmp_path / "train_32x32.mat", {"X": x, "y": y})
    sio.savemat(tmp_path / "test_32x32.mat", {"X": x[..., :2], "y": y[:2]})
    ds = load_dataset("svhn", tmp_path)
    assert ds.train_y.tolist() == [0, 1, 9, 0] and ds.input_shape == (3, 32, 32)
    assert torch.equal(ds.train_x[2], torch.from_numpy(x[..., 2]).permute(2, 0, 1))


def test_cinic10_png_folders(tmp_path):
    from fedflat.training.data.folders import CINIC_CLASSES

    want = {}
    for split in ("train", "test"):
        for k, c in enumerate(CINIC_CLASSES):
            img = RNG.integers(0, 256, (32, 32, 3), dtype=np.uint8)
            write_png(tmp_path / "cinic10" / split / c / f"cifar10-{split}-{k}.png", img)
            want[(split, k)] = img
    ds = load_dataset("cinic10", tmp_path)
    assert ds.train_y.tolist() == list(range(10)) and ds.test_x.shape == (10, 3, 32, 32)
    assert torch.equal(ds.train_x[3], torch.from_numpy(want[("train", 3)]).permute(2, 0, 1))
    assert ds.augment is not None and ds.augment.pad_mode == "reflect"


def test_cinic10_wrong_image_size(tmp_path):
    from fedflat.training.data.folders import CINIC_CLASSES

    for split in ("train", "test"):
        for c in CINIC_CLASSES:
            write_png(tmp_path / "cinic10" / split / c / "a.png", np.zeros((31, 32, 3), np.uint8))
    with pytest.raises(ConfigError, match="expected 32x32"):
        load_dataset("cinic10", tmp_path)


def test_tiny_imagenet_folders(tmp_path):
    base = tmp_path / "tiny-imagenet-200"
    wnids = ["n02", "n01"]
    base.mkdir()
    (base / "wnids.txt").write_text("\n".join(wnids) + "\n")
    for w in wnids:
        for i in range(2):
            write_png(base / "train" / w / "images" / f"{w}_{i}.JPEG", np.full((64, 64, 3), 200, np.uint8), "JPEG")
    write_png(base / "val" / "images" / "val_0.JPEG", np.full((64, 64, 3), 10, np.uint8), "JPEG")
    write_png(base / "val" / "images" / "val_1.JPEG", np.full((64, 64, 3), 10, np.uint8), "JPEG")
    (base / "val" / "val_annotations.txt").write_text("val_0.JPEG\tn02\t0\t0\t63\t63\nval_1.JPEG\tn01\t0\t0\t63\t63\n")
    ds = load_dataset("tiny_imagenet", tmp_path)
    assert ds.num_classes == 200 and ds.input_shape == (3, 64, 64)
    assert ds.train_y.tolist() == [0, 0, 1, 1] and ds.test_y.tolist() == [1, 0]  # sorted wnids: n01=0, n02=1
    assert abs(ds.train_x.float().mean().item() - 200) < 2 and abs(ds.test_x.float().mean().item() - 10) < 2


@pytest.mark.parametrize("name,channels,k", [("pathmnist", 3, 9), ("tissuemnist", 1, 8)])
def test_medmnist_npz_train_plus_val(tmp_path, no_md5, name, channels, k):
    shape = (28, 28, 3) if channels == 3 else (28, 28)
    arrays = {}
    for split, n in (("train", 3), ("val", 2), ("test", 2)):
        arrays[f"{split}_images"] = RNG.integers(0, 256, (n, *shape), dtype=np.uint8)
        arrays[f"{split}_labels"] = RNG.integers(0, k, (n, 1))
    (tmp_path / "medmnist").mkdir()
    np.savez(tmp_path / "medmnist" / f"{name}.npz", **arrays)
    ds = load_dataset(name, tmp_path)
    assert ds.num_classes == k and ds.input_shape == (channels, 28, 28) and len(ds.train_y) == 5
    first = torch.from_numpy(arrays["train_images"][0])
    assert torch.equal(ds.train_x[0], first.permute(2, 0, 1) if channels == 3 else first[None])
    assert ds.train_y.tolist() == np.concatenate([arrays["train_labels"], arrays["val_labels"]]).ravel().tolist()
    assert len(load_dataset(f"{name}-trainonly", tmp_path).train_y) == 3
    assert len(load_dataset(name, tmp_path).train_y) == 5  # the trainonly cache did not evict this one


def test_train_batch_normalises_and_augments_deterministically(tmp_path, no_md5):
    _make_cifar10(tmp_path)
    ds = load_dataset("cifar10", tmp_path)
    idx = torch.tensor([0, 3, 7])
    g1, g2 = torch.Generator().manual_seed(5), torch.Generator().manual_seed(5)
    a, ya = ds.train_batch(idx, g1)
    b, _ = ds.train_batch(idx, g2)
    assert torch.equal(a, b) and a.dtype == torch.float32 and ya.tolist() == ds.train_y[idx].tolist()
    plain = ds.normalise(ds.train_x[idx])
    assert not torch.equal(a, plain)  # something moved
