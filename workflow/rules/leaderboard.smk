# The leaderboard (config/leaderboard.yaml): each selection is a checkpoint, so the runs it selects join the DAG
# as soon as it exists. With `tuning.continuation` the screen's best cells (checkpoint leaderboard_screen) run the
# full horizon on every partition's validation split, and the choice (leaderboard_choice) reads those; without it
# the choice reads the screen (src/fedflat/results/leaderboard/flow.py). Inert for every other study.
if STUDY.leaderboard is not None:
    from fedflat.results.leaderboard.flow import (choice_inputs as _lb_choice_inputs, choice_path as _lb_choice_path,
                                                  evidence_gaps as _lb_evidence_gaps, register_known_stages,
                                                  screen_path as _lb_screen_path, tuning_inputs as _lb_tuning_inputs)

    # the stages whose checkpoint file exists are known now: a final or ablation run asked for by its path
    # (`snakemake results/runs/<id>/summary.json`) is found without first evaluating a checkpoint
    register_known_stages(STUDY)

    # `snakemake leaderboard_runs`: only the runs the committed evidence lacks (a session's share of the work;
    # export its evidence before the machine goes). The table and figures still read run directories.
    rule leaderboard_runs:
        localrule: True
        input:
            lambda wc: _lb_evidence_gaps(STUDY),

    checkpoint leaderboard_screen:
        localrule: True
        input:
            lambda wc: _lb_tuning_inputs(STUDY),
        output:
            _lb_screen_path(STUDY),
        run:
            from fedflat.results.leaderboard.flow import write_screen

            write_screen(STUDY, output[0])

    checkpoint leaderboard_choice:
        localrule: True  # reads a few hundred small JSON files; never worth a cluster job
        input:
            lambda wc: _lb_choice_inputs(STUDY),
        output:
            _lb_choice_path(STUDY),
        run:
            from fedflat.results.leaderboard.flow import write_choice

            write_choice(STUDY, output[0])

    def _lb_screen():
        return json.loads(Path(checkpoints.leaderboard_screen.get().output[0]).read_text())

    def _lb_choice():
        return json.loads(Path(checkpoints.leaderboard_choice.get().output[0]).read_text())

    STUDY.screen = _lb_screen
    STUDY.choice = _lb_choice
