"""Shakespeare from the Gutenberg text layout: role parsing, windows, split, natural partition."""
from __future__ import annotations

import json

import pytest
import torch

from data_formats import PLAY_TEXT
from fedflat.data import load_dataset
from fedflat.data import shakespeare as sh
from fedflat.data.natural import natural_partition
from fedflat.errors import ConfigError


def _decode(t):
    return "".join(sh.VOCAB[i] for i in t.tolist())


def test_parse_roles_speeches_and_continuations():
    roles = sh.parse_roles(PLAY_TEXT)
    assert sorted(roles) == ["THE TRAGEDY OF TINY::ALPHA", "THE TRAGEDY OF TINY::BETA"]  # sonnets skipped
    alpha = sh.role_text(roles["THE TRAGEDY OF TINY::ALPHA"])
    assert alpha.startswith("First words of alpha, spoken clearly to the crowd. And alpha continues")
    assert "Enter GAMMA" not in alpha and "enough characters. Speech number 0" in alpha


def test_vocab_is_leafs_80_symbols_and_unknown_maps_to_space():
    assert len(sh.VOCAB) == 80 and len(set(sh.VOCAB)) == 80
    assert _decode(torch.from_numpy(sh.encode("a~b"))) == "a b"


def test_windows_labels_split_and_groups(tmp_path):
    (tmp_path / "shakespeare").mkdir()
    (tmp_path / "shakespeare" / "raw_data.txt").write_text(PLAY_TEXT)
    ds = load_dataset("shakespeare-all", tmp_path)
    roles = sh.parse_roles(PLAY_TEXT)
    beta = sh.role_text(roles["THE TRAGEDY OF TINY::BETA"])
    assert ds.meta["clients"] == ["THE TRAGEDY OF TINY::ALPHA", "THE TRAGEDY OF TINY::BETA"]
    assert ds.num_classes == 80 and ds.input_shape == (80,) and ds.train_x.dtype == torch.int64
    g = ds.meta["train_groups"]
    bx, by = ds.train_x[g == 1], ds.train_y[g == 1]
    cut = int(round(len(beta) * (1 - sh.TEST_FRACTION)))
    assert len(by) == cut - 80
    for i in (0, 7, len(by) - 1):  # input = 80 characters, label = the next one
        assert _decode(bx[i]) == beta[i:i + 80] and sh.VOCAB[by[i]] == beta[i + 80]
    tx = ds.test_x[ds.meta["test_groups"] == 1]
    assert _decode(tx[0]) == beta[cut:cut + 80]  # test windows come after the train text
    p = natural_partition(ds)
    assert p.num_clients == 2 and p.meta["client_names"][1].endswith("BETA")
    assert torch.equal(torch.as_tensor(p.clients[1]), torch.nonzero(g == 1).flatten())
    assert p.histogram.sum() == len(ds.train_y)


def test_capped_selection(tmp_path, monkeypatch):
    monkeypatch.setattr(sh, "NUM_CLIENTS", 2)
    monkeypatch.setattr(sh, "TRAIN_PER_CLIENT", 5)  # both roles qualify
    monkeypatch.setattr(sh, "TEST_PER_CLIENT", 3)
    (tmp_path / "shakespeare").mkdir()
    (tmp_path / "shakespeare" / "pg100.txt").write_text(PLAY_TEXT)
    ds = load_dataset("shakespeare", tmp_path)
    assert len(ds.train_y) == 10 and len(ds.test_y) == 6
    assert ds.meta["train_groups"].tolist() == [0] * 5 + [1] * 5
    monkeypatch.setattr(sh, "NUM_CLIENTS", 3)
    (tmp_path / "shakespeare" / "pg100.txt").write_text(PLAY_TEXT + "\n")  # rebuild
    with pytest.raises(ConfigError, match="only 2 roles"):
        load_dataset("shakespeare", tmp_path)


def test_leaf_json_and_missing(tmp_path):
    with pytest.raises(ConfigError, match=r"raw_data\.txt .* in .*shakespeare"):
        load_dataset("shakespeare", tmp_path)
    for split, n in (("train", 3), ("test", 1)):
        d = tmp_path / "shakespeare" / split
        d.mkdir(parents=True)
        data = {"u1": {"x": ["a" * 80] * n, "y": ["b"] * n}, "u2": {"x": ["c" * 80] * n, "y": ["d"] * n}}
        (d / "all.json").write_text(json.dumps({"users": ["u1", "u2"], "user_data": data}))
    ds = load_dataset("shakespeare", tmp_path)
    assert ds.meta["clients"] == ["u1", "u2"] and len(ds.train_y) == 6 and sh.VOCAB[ds.test_y[1]] == "d"


def test_natural_partition_refuses_datasets_without_groups():
    ds = load_dataset("digits")
    with pytest.raises(ConfigError, match="natural"):
        natural_partition(ds)
