"""What the leaderboard adds to a study (study.StudyPreparer), registered when the composition root imports this
module: its protocol expands into tuning and final experiments (protocol.prepare), the expanded study keeps the
protocol as `study.leaderboard`, and an in-process build (fedflat.pipeline.build) lets the checkpoints train what they
rest on (flow.ensure_screen, flow.ensure_choice) instead of waiting for Snakemake's checkpoint rules."""
from __future__ import annotations

from ...pipeline.study import STUDY_PREPARERS, StudyPreparer
from .protocol import is_leaderboard, prepare


def _attach(study, protocol) -> None:
    study.leaderboard = protocol


def _in_process(study, data_root: str) -> None:
    from .flow import ensure_choice, ensure_screen

    if study.leaderboard is not None and study.choice is None:
        study.screen = lambda: ensure_screen(study, data_root)
        study.choice = lambda: ensure_choice(study, data_root)


STUDY_PREPARERS.add("leaderboard", StudyPreparer(applies=is_leaderboard, prepare=prepare, attach=_attach,
                                                 in_process=_in_process))
