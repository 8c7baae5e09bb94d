"""The offline real-data writer: a pickle may name numpy arrays only, idx files carry the MNIST header, the digest
sees names and bytes, and a folder whose files differ from the pinned ones is refused, never overwritten."""
import os
import pickle
import struct

import numpy as np
import pytest

from fedflat.core.errors import ConfigError
from fedflat.training.data import offline_archives as oa


def test_the_pickle_loader_takes_numpy_arrays_and_refuses_any_other_global(tmp_path):
    import io

    arrays = {"train_X": np.arange(6, dtype=np.float64).reshape(2, 3)}
    got = oa._ArraysOnly(io.BytesIO(pickle.dumps(arrays))).load()
    assert np.array_equal(got["train_X"], arrays["train_X"])

    class Evil:
        def __reduce__(self):
            return (os.system, ("true",))

    with pytest.raises(pickle.UnpicklingError, match="refused global"):
        oa._ArraysOnly(io.BytesIO(pickle.dumps(Evil()))).load()


def test_idx_files_carry_the_mnist_magic_and_sizes(tmp_path):
    oa._idx(tmp_path / "i", np.full((2, 28, 28), 7))
    oa._idx(tmp_path / "l", np.array([3, 4]))
    raw = (tmp_path / "i").read_bytes()
    assert struct.unpack(">IIII", raw[:16]) == (0x0803, 2, 28, 28) and raw[16:] == bytes([7]) * 2 * 28 * 28
    assert struct.unpack(">II", (tmp_path / "l").read_bytes()[:8]) == (0x0801, 2)
    assert (tmp_path / "l").read_bytes()[8:] == bytes([3, 4])


def test_the_digest_sees_each_matching_file_s_name_and_bytes_only(tmp_path):
    (tmp_path / "a-ubyte").write_bytes(b"x")
    d = oa.digest(tmp_path, "*-ubyte")
    (tmp_path / "README.txt").write_text("not data")
    assert oa.digest(tmp_path, "*-ubyte") == d
    (tmp_path / "a-ubyte").write_bytes(b"y")
    assert oa.digest(tmp_path, "*-ubyte") != d
    (tmp_path / "a-ubyte").write_bytes(b"x")
    (tmp_path / "a-ubyte").rename(tmp_path / "b-ubyte")
    assert oa.digest(tmp_path, "*-ubyte") != d


def test_files_that_differ_from_the_pinned_ones_are_refused_and_kept(tmp_path):
    raw = tmp_path / "FashionMNIST/raw"
    raw.mkdir(parents=True)
    (raw / "train-images-idx3-ubyte").write_bytes(b"official files, not the records' split")
    with pytest.raises(ConfigError, match="not the ones the records were made with"):
        oa.ensure("fmnist", tmp_path, progress=lambda s: None)
    assert (raw / "train-images-idx3-ubyte").read_bytes() == b"official files, not the records' split"


def test_a_folder_with_the_pinned_files_is_kept_without_fetching(tmp_path, monkeypatch):
    monkeypatch.setitem(oa.SETS, "fmnist", ("pkg", "1", "F", "*-ubyte", None))
    (tmp_path / "F").mkdir()
    (tmp_path / "F/train-labels-idx1-ubyte").write_bytes(b"\0")
    monkeypatch.setitem(oa.SETS, "fmnist", ("pkg", "1", "F", "*-ubyte", oa.digest(tmp_path / "F", "*-ubyte")))
    monkeypatch.setattr(oa, "fetch", lambda *a: pytest.fail("fetched although the files are there"))
    said = []
    assert oa.ensure("fmnist", tmp_path, progress=said.append) == tmp_path / "F"
    assert "already holds the pinned files" in said[0]


def test_an_unknown_set_is_one_line(capsys):
    assert oa.main(["/nonexistent", "--sets", "cifar10"]) == 2
    assert capsys.readouterr().err.strip() == "error: --sets: 'cifar10' is not one of mnist, fmnist, shakespeare"
