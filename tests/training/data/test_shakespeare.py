"""Shakespeare from its three layouts (LEAF json, 1994 complete works, per-play etexts): role parsing,
windows, split, selection and caps, source order, natural partition."""
from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from data_formats import GUT_PLAYS, GUT_ROLE_TEXT, PLAY_TEXT, write_gut_plays
from fedflat.training.data import load_dataset
from fedflat.training.data import shakespeare as sh
from fedflat.training.data import shakespeare_plays as plays
from fedflat.training.data.natural import natural_partition
from fedflat.core.errors import ConfigError


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


def _write_leaf_json(root, n_train=3, n_test=1):
    for split, n in (("train", n_train), ("test", n_test)):
        d = root / "shakespeare" / split
        d.mkdir(parents=True, exist_ok=True)
        data = {"u1": {"x": ["a" * 80] * n, "y": ["b"] * n}, "u2": {"x": ["c" * 80] * n, "y": ["d"] * n}}
        (d / "all.json").write_text(json.dumps({"users": ["u1", "u2"], "user_data": data}))


def test_leaf_json(tmp_path, monkeypatch):
    _write_leaf_json(tmp_path)
    ds = load_dataset("shakespeare-all", tmp_path)
    assert ds.meta["clients"] == ["u1", "u2"] and len(ds.train_y) == 6 and sh.VOCAB[ds.test_y[1]] == "d"
    # the capped set goes through FedDyn's eligibility, draw and caps like the parsed text
    monkeypatch.setattr(sh, "NUM_CLIENTS", 1)
    monkeypatch.setattr(sh, "TRAIN_PER_CLIENT", 2)
    monkeypatch.setattr(sh, "TEST_PER_CLIENT", 1)
    ds = load_dataset("shakespeare", tmp_path)
    assert len(ds.meta["clients"]) == 1 and len(ds.train_y) == 2 and len(ds.test_y) == 1


def test_missing_data_names_every_layout(tmp_path):
    with pytest.raises(ConfigError) as e:
        load_dataset("shakespeare", tmp_path)
    msg = str(e.value)
    assert "\n" not in msg and str(tmp_path / "shakespeare") in msg
    for what in ("train/*.json", "test/*.json", "100.txt", "1994", "plays/*_gut.txt"):
        assert what in msg
    (tmp_path / "shakespeare" / "plays").mkdir(parents=True)
    (tmp_path / "shakespeare" / "plays" / "notes.txt").write_text("not a play")
    with pytest.raises(ConfigError, match="no text in"):
        load_dataset("shakespeare", tmp_path)


# ------------------------------------------------------------------------- per-play Gutenberg etexts
def test_plays_parser_speaker_conventions():
    roles = plays.parse_plays(list(GUT_PLAYS.values()))
    assert {k: sh.role_text(v) for k, v in roles.items()} == GUT_ROLE_TEXT


def test_plays_poem_directions_headings_excluded():
    title, roles = plays.parse_play(GUT_PLAYS["sonnets_gut.txt"])
    assert title == "THE SONNETS" and roles == {}  # no ACT heading: a poem, no speakers
    text = " ".join(" ".join(v) for v in plays.parse_plays(list(GUT_PLAYS.values())).values())
    for gone in ("Enter", "Exit", "Aside", "PERSONS", "castle", "Throne", "Lords", "Another place", "SONG", "@",
                 "Nobody", "Dramatis", "Elsinore", "Duke"):
        assert gone not in text


@pytest.mark.parametrize("line, start, want", [
    ("BERTRAM.", True, ("BERTRAM", "")), ("MRS. PAGE.", True, ("MRS. PAGE", "")),
    ("CYMBELINE. Thou foolish thing!", True, ("CYMBELINE", "Thou foolish thing!")),
    ("ALL. Farewell.", True, ("ALL", "Farewell.")), ("1. CAR.", True, ("1. CAR", "")),
    ("Lady  Capulet.", True, ("LADY CAPULET", "")), ("I Player.", True, ("I PLAYER", "")),
    ("LADY FalcoNBRIDGE.", True, ("LADY FALCONBRIDGE", "")), ("THESEUS", True, ("THESEUS", "")),
    ("CITIZENS.", False, ("CITIZENS", "")),  # a speech that lost its blank line
    ("THESEUS", False, None), ("Ham.", False, None), ("KING. Ay, that is so.", False, None),
    ("Saddle my horse.", True, None), ("It is my mistress.", True, None), ("III.", True, None),
    ("O Banquo, Banquo!", True, None), ("Now, Iras.", True, None), ("Go, Philostrate,", True, None),
    ("Long Live Our Noble King Henry.", True, None),
])
def test_plays_speaker_line(line, start, want):
    assert plays.speaker(line, start) == want


def test_plays_stage_directions():
    assert plays.strip_directions("[Enter A, B,", False) == ("", True)  # opens a paragraph-long direction
    assert plays.strip_directions("and C.]", True) == ("", False)
    assert plays.strip_directions("Sergeant, you shall. [Exit Sergeant.", False) == ("Sergeant, you shall. ", False)
    assert plays.strip_directions("Is woe.--[To Kent.] Friends", False) == ("Is woe.-- Friends", False)
    assert plays.strip_directions("[Exeunt [all but Boy.]", False) == ("", True)  # nested, never closed
    assert plays.strip_directions("FIRST LORD. {Aside.]", False) == ("FIRST LORD. ", False)
    assert plays.strip_directions("SCENE II. Rome.]", False) == ("SCENE II. Rome.", False)  # stray closer


def test_plays_layout_windows_labels_split(tmp_path):
    write_gut_plays(tmp_path)
    ds = load_dataset("shakespeare-all", tmp_path)
    assert ds.meta["source"].startswith("shakespeare (plays:")
    # roles with at least one train and one test window, sorted; the short ones drop out
    assert ds.meta["clients"] == ["THE TRAGEDY OF TESTA::ALPHA", "THE TRAGEDY OF TESTA::BETA"]
    for cid, name in enumerate(ds.meta["clients"]):
        text = GUT_ROLE_TEXT[name]
        cut = int(round(len(text) * (1 - sh.TEST_FRACTION)))
        g, tg = ds.meta["train_groups"] == cid, ds.meta["test_groups"] == cid
        x, y, tx, ty = ds.train_x[g], ds.train_y[g], ds.test_x[tg], ds.test_y[tg]
        assert len(y) == cut - 80 and len(ty) == len(text) - cut - 80
        for i in range(len(y)):  # every window of the first 5/6, in order; label = the next character
            assert _decode(x[i]) == text[i:i + 80] and sh.VOCAB[y[i]] == text[i + 80]
        for i in (0, len(ty) - 1):  # test windows lie in the last 1/6
            assert _decode(tx[i]) == text[cut + i:cut + i + 80] and sh.VOCAB[ty[i]] == text[cut + i + 80]
    p = natural_partition(ds)
    assert p.num_clients == 2 and p.meta["client_names"][0].endswith("ALPHA")


def test_plays_capped_eligibility_caps_determinism(tmp_path, monkeypatch):
    monkeypatch.setattr(sh, "NUM_CLIENTS", 1)
    monkeypatch.setattr(sh, "TRAIN_PER_CLIENT", 600)  # only ALPHA has 600 train and 100 test windows
    monkeypatch.setattr(sh, "TEST_PER_CLIENT", 100)
    runs = []
    for k in range(2):  # two data roots: no shared cache, the draw itself is deterministic
        write_gut_plays(tmp_path / str(k))
        runs.append(load_dataset("shakespeare", tmp_path / str(k)))
    ds = runs[0]
    assert ds.meta["clients"] == ["THE TRAGEDY OF TESTA::ALPHA"]
    assert len(ds.train_y) == 600 and len(ds.test_y) == 100
    text = GUT_ROLE_TEXT["THE TRAGEDY OF TESTA::ALPHA"]
    cut = int(round(len(text) * (1 - sh.TEST_FRACTION)))
    for x, y, part in ((ds.train_x, ds.train_y, text[:cut]), (ds.test_x, ds.test_y, text[cut:])):
        wx, wy = sh.windows(sh.encode(part))  # every (window, next char) of that part of the role's text
        pairs = {(bytes(w), int(c)) for w, c in zip(wx, wy)}
        assert all((bytes(w.numpy().astype(np.uint8)), int(c)) in pairs for w, c in zip(x, y))
        assert len(wx) > len(y) and not torch.equal(x, torch.tensor(wx[:len(y)]).long())  # a draw, not a prefix
    assert all(torch.equal(getattr(runs[0], f), getattr(runs[1], f)) for f in ("train_x", "train_y", "test_x", "test_y"))
    monkeypatch.setattr(sh, "NUM_CLIENTS", 2)
    (tmp_path / "0" / "shakespeare" / "plays" / "dream_of_tests_gut.txt").write_text(GUT_PLAYS["dream_of_tests_gut.txt"] + "\n")
    with pytest.raises(ConfigError, match="only 1 roles"):
        load_dataset("shakespeare", tmp_path / "0")


def test_plays_cache_and_rebuild(tmp_path):
    folder = write_gut_plays(tmp_path)
    a = load_dataset("shakespeare-all", tmp_path)
    cached = list((tmp_path / "cache").glob("shakespeare-all-plays-v*.pt"))
    assert len(cached) == 1
    b = load_dataset("shakespeare-all", tmp_path)
    assert torch.equal(a.train_x, b.train_x) and a.meta["clients"] == b.meta["clients"]
    (folder / "tragedy_of_abbrev_gut.txt").write_text(GUT_PLAYS["tragedy_of_abbrev_gut.txt"] + "\nHam.\n" + "Words. " * 100)
    c = load_dataset("shakespeare-all", tmp_path)  # a changed play rebuilds
    assert "THE TRAGEDY OF ABBREV::HAM" in c.meta["clients"]


def test_source_order_leaf_then_complete_works_then_plays(tmp_path):
    write_gut_plays(tmp_path)
    (tmp_path / "shakespeare" / "100.txt").write_text(PLAY_TEXT)
    _write_leaf_json(tmp_path)
    kinds = []
    for remove in ("train", "100.txt", None):
        kinds.append(load_dataset("shakespeare-all", tmp_path).meta["source"].split(":")[0])
        if remove == "train":
            for f in (tmp_path / "shakespeare" / "train").glob("*.json"):
                f.unlink()
        elif remove:
            (tmp_path / "shakespeare" / remove).unlink()
    assert kinds == ["shakespeare (leaf", "shakespeare (raw", "shakespeare (plays"]


def test_natural_partition_refuses_datasets_without_groups():
    ds = load_dataset("digits")
    with pytest.raises(ConfigError, match="natural"):
        natural_partition(ds)
