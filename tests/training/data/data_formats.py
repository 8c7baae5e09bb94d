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


# Per-play Gutenberg etexts (`shakespeare/plays/*_gut.txt`), one per speaker convention found in the
# real files: full-caps names with a period, abbreviated/mixed-case names (Hamlet, Lear, Romeo), names
# without a period (A Midsummer Night's Dream), and a poem (no ACT heading: no roles).
_ALPHA_LONG = [f"Speech number {i} of alpha, long enough to fill several windows of text.\n"
               f"It carries on for a while, line {i}, so the test split has windows too." for i in range(12)]
_BETA_LONG = [f"Beta's answer {i}: no, yes; perhaps (or not) -- who can tell?" for i in range(12)]
_LONG_SPEECHES = "".join(f"ALPHA.\n{a}\n\nBETA.\n{b}\n\n" for a, b in zip(_ALPHA_LONG, _BETA_LONG))

GUT_PLAYS = {
    "tragedy_of_testa_gut.txt": """THE TRAGEDY OF TESTA

by William Shakespeare




PERSONS REPRESENTED.

ALPHA, a lord.
BETA, his friend.
GAMMA, a servant.

SCENE: A castle.



ACT I.

SCENE I. A hall in the castle, before the
Throne.
Lords attending.

[Enter ALPHA and BETA, talking,
and GAMMA behind.]

ALPHA.
First words of alpha.
Second line of alpha.

BETA. [Aside.]
Beta speaks aside.

ALPHA. Inline start of alpha.   
And more.

GAMMA.
Gamma begins. [Exit BETA.
Gamma goes on after the exit.

[Exit ALPHA.]

Gamma still speaks after the direction.

ALPHA and BETA.
Together we speak.

BETA. {Aside.]
Beta again, with a brace.
ALPHA.
Alpha without a blank line before the name.

BETA.
        SONG
    Sing hey, sing ho.
        II.
    Second stanza here.
@@@

ACT II.

SCENE I.

Another place.

""" + _LONG_SPEECHES + """EPILOGUE

Nobody's lines here, they are dropped.

[Exeunt.]""",
    "tragedy_of_abbrev_gut.txt": """THE TRAGEDY OF ABBREV

by William Shakespeare



Dramatis Personae

Hamlin, a prince.
Two Clowns.

SCENE.--Elsinore.

ACT I.

Scene I. A platform.

[Enter Hamlin and a Clown.]

Ham.
To speak or not to speak.

1 Clown.
A clown's answer.

P. Queen.
The player queen says this.

Ham.
Hamlin again.

[Exit Clown.]

Saddle my horse.
Hamlin goes on.
""",
    "dream_of_tests_gut.txt": """A DREAM OF TESTS

by William Shakespeare

Persons Represented.

THESEUS, Duke.
PUCK, a fairy.

ACT I.

SCENE I. Athens.

THESEUS
Now, fair one, our hour draws on.

PUCK
I go, I go; look how I go.

      SONG.
        I.
FIRST FAIRY
You spotted snakes.
""",
    "sonnets_gut.txt": """THE SONNETS

by William Shakespeare

  I

  From fairest creatures we desire increase,
  That thereby beauty's rose might never die,

  II

  When forty winters shall besiege thy brow,
""",
}

GUT_ROLE_TEXT = {  # what the parser must extract, speeches joined and whitespace collapsed
    "THE TRAGEDY OF TESTA::ALPHA": "First words of alpha. Second line of alpha. Inline start of alpha. And more. "
                                   "Alpha without a blank line before the name. " + " ".join(_ALPHA_LONG).replace("\n", " "),
    "THE TRAGEDY OF TESTA::BETA": "Beta speaks aside. Beta again, with a brace. Sing hey, sing ho. Second stanza here. "
                                  + " ".join(_BETA_LONG),
    "THE TRAGEDY OF TESTA::GAMMA": "Gamma begins. Gamma goes on after the exit. Gamma still speaks after the direction.",
    "THE TRAGEDY OF TESTA::ALPHA AND BETA": "Together we speak.",
    "THE TRAGEDY OF ABBREV::HAM": "To speak or not to speak. Hamlin again. Saddle my horse. Hamlin goes on.",
    "THE TRAGEDY OF ABBREV::1 CLOWN": "A clown's answer.",
    "THE TRAGEDY OF ABBREV::P. QUEEN": "The player queen says this.",
    "A DREAM OF TESTS::THESEUS": "Now, fair one, our hour draws on.",
    "A DREAM OF TESTS::PUCK": "I go, I go; look how I go.",
    "A DREAM OF TESTS::FIRST FAIRY": "You spotted snakes.",
}


def write_gut_plays(root: Path, plays: dict[str, str] = GUT_PLAYS) -> Path:
    folder = root / "shakespeare" / "plays"
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in plays.items():
        (folder / name).write_text(text, encoding="latin-1")
    return folder
