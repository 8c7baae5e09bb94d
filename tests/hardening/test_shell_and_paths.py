"""No config string reaches a shell as code, and no output path leaves its root.

- data_root, device and the interpreter are shell-quoted once where the workflow defines them (common.smk), the
  partition rule's values through its params, table and figure outputs with `:q`; a data_root holding `$(...)`,
  backticks or `;` runs a real job through Snakemake and the shell never executes it;
- names that become paths (study, experiment, table, figure; tables_dir, figures_dir) are safe words, refused at
  validation in one line naming the key: `$(...)`, backticks, `;`, `../` each;
- the writers that build a path from a name check it stays under its root (util/names.under).
"""
from __future__ import annotations

import copy
import re
import shlex
from pathlib import Path

import pytest
import yaml

from fedflat.cli import main as cli
from fedflat.core.errors import ConfigError
from fedflat.pipeline.inputs import validate_config
from fedflat.pipeline.study import Study
from fedflat.core.util.names import check_name, check_relative_dir, under

from faults.helpers import snakemake, workdir
from .helpers import one_line

REPO = Path(__file__).resolve().parents[2]
TINY = yaml.safe_load((REPO / "config/tiny.yaml").read_text())
ATTACKS = {"subst": "x$(touch {m})", "backticks": "x`touch {m}`", "semicolon": "x;touch {m}", "up": "../../{m}"}


def _rename(cfg: dict, section: str, new: str) -> dict:
    cfg = copy.deepcopy(cfg)
    old = next(iter(cfg[section]))
    cfg[section][new] = cfg[section].pop(old)
    if section == "experiments":
        for t in (*cfg["tables"].values(), *cfg["figures"].values()):
            t["experiment"] = new
    return cfg


@pytest.mark.parametrize("attack", ATTACKS)
@pytest.mark.parametrize("field", ["study", "experiments", "tables", "figures", "tables_dir", "figures_dir"])
def test_a_name_that_becomes_a_path_is_refused_in_one_line(tmp_path, field, attack):
    bad = ATTACKS[attack].format(m=tmp_path / "marker")
    cfg = {**TINY, field: bad} if field in ("study", "tables_dir", "figures_dir") else _rename(TINY, field, bad)
    with pytest.raises(ConfigError) as exc:
        validate_config(cfg)
    msg = str(exc.value)
    key = field if field in ("study", "tables_dir", "figures_dir") else f"{field}.{bad}"
    assert msg.startswith(f"{key}: ") and "\n" not in msg and "safe" in msg


def test_the_shipped_names_stay_valid():
    for name in ("tiny", "fedsynsam_table1_tiny", "t2B_fmnist_k10", "cont_dir0p1", "fig7.landscape-2d"):
        assert check_name("study", name) == name
    assert check_relative_dir("tables_dir", "results/tuning/fedsynsam_v2") == "results/tuning/fedsynsam_v2"
    for bad in ("", ".hidden", "..", "a/b", "a b", "tab\tle", None, 3):
        with pytest.raises(ConfigError):
            check_name("study", bad)
    for bad in ("/abs", "a/../b", "a//b", "a/", "~/x"):
        with pytest.raises(ConfigError):
            check_relative_dir("tables_dir", bad)


def test_writers_check_their_path_stays_under_its_root(tmp_path):
    from fedflat.evidence.export import evidence_dir
    from fedflat.pipeline.report.benchmarks import benchmarks_output

    assert under(tmp_path, "a", "b.md") == tmp_path / "a" / "b.md"
    for parts in (("..", "x"), ("/etc", "x"), ("a/../../x",)):
        with pytest.raises(ConfigError, match="leads outside"):
            under(tmp_path, *parts)
    (tmp_path / "out").symlink_to("/")  # a link out of the root is outside too
    with pytest.raises(ConfigError, match="leads outside"):
        under(tmp_path, "out", "x")
    # the guards behind validation: a study expanded without it still writes nowhere outside
    with pytest.raises(ConfigError, match="study: '../../x' leads outside"):
        evidence_dir("../../x", tmp_path)
    with pytest.raises(ConfigError, match="leads outside"):
        benchmarks_output(Study({"study": "../../../x"}))


# ------------------------------------------------------------------ the workflow's shell commands
def _shell_commands() -> dict[str, str]:
    """{rule name: its shell command's text} over workflow/rules/*.smk."""
    out = {}
    for f in sorted((REPO / "workflow/rules").glob("*.smk")):
        for m in re.finditer(r"rule (\w+):.*?\n    shell:[^\n]*\n((?:\s+\"[^\n]*\"\n?)+)", f.read_text(), re.S):
            out[m.group(1)] = "".join(re.findall(r'"([^"]*)"', m.group(2)))
    return out


# fields a shell command may hold unquoted, and why none of them is a config string written as code
SAFE_UNQUOTED = {
    "PY": "shlex.quote(sys.executable) in common.smk",
    "DATA_ROOT": "shlex.quote(config data_root) in common.smk",
    "DEVICE": "shlex.quote(config device) in common.smk",
    "DOWNLOAD": "the constant '--download' or ''",
    "NUMERICS": "portable or native (util.numerics.check_mode at validation)",
    "CLEAN": "the constant '--require-clean' or ''",
    "threads": "an integer",
    "wildcards.dims": "wildcard_constraints: [12]",
    "params.p[dataset]": "shell_quoted params (common.smk)", "params.p[partition]": "shell_quoted params",
    "params.p[num_clients]": "shell_quoted params", "params.p[seed]": "shell_quoted params",
    "params.p[variant]": "shell_quoted params", "params.p[samples_per_client]": "shell_quoted params",
    "params.missing": "shlex.quote in data.smk",
    # a run's or partition's path: registry names, a canonical partition (regex-checked), a hex digest, integers
    "output": "a run's or partition's path", "log": "a run's or partition's path",
    "params.run_dir": "a run's path", "params.out_dir": "a run's path", "input.partition": "a partition's path",
    "output.json": "a run's path",
}


def test_no_rule_puts_a_config_string_unquoted_into_a_shell_command():
    cmds = _shell_commands()
    assert {"partition", "train", "hessian", "hessian_snapshot", "landscape", "stability", "table", "figure"} <= set(cmds)
    for rule, cmd in cmds.items():
        for field, spec in re.findall(r"\{([^{}:]+)(:[^{}]*)?\}", cmd):
            assert spec == ":q" or field in SAFE_UNQUOTED, f"rule {rule}: {{{field}}} reaches the shell unquoted"
            assert not (spec == ":q" and field in ("PY", "DATA_ROOT", "DEVICE")), f"rule {rule}: {field} quoted twice"
    # table and figure names come from the config: their outputs are quoted
    assert "{output.md:q}" in cmds["table"] and "{output.pdf:q} {output.png:q}" in cmds["figure"]


def test_the_quoting_definitions_quote():
    common = (REPO / "workflow/rules/common.smk").read_text()
    for name, source in (("PY", "sys.executable"), ("DATA_ROOT", 'str(config.get("data_root", "data"))'),
                         ("DEVICE", 'str(config.get("device", "cpu"))')):
        assert f"{name} = shlex.quote({source})" in common
    assert 'p=lambda wc: shell_quoted(STUDY.partitions[wc.pid])' in (REPO / "workflow/rules/data.smk").read_text()


ONE_RUN = {"study": "q", "data_root": "data", "device": "cpu", "threads_per_job": 1,
           "training": {"num_clients": 4, "participation": 0.5, "rounds": 1, "local_steps": 1, "batch_size": 16,
                        "eval_every": 1},
           "experiments": {"main": {"datasets": ["digits"], "models": ["mlp"], "partitions": ["iid"], "seeds": [0],
                                    "algorithms": ["fedavg"]}},
           "tables": {"main": {"experiment": "main"}}}


@pytest.mark.e2e
def test_a_data_root_with_shell_code_is_a_directory_name_to_every_job(tmp_path):
    """Through Snakemake: the partition, train and table jobs run with data_root holding $(...), backticks and `;`
    (digits ships with scikit-learn, so any data_root serves), and with a label (free text) holding the same, '../'
    and '|'; the shell runs none of it, and the label stays one Markdown cell."""
    wd = workdir(tmp_path / "wd")
    marker = wd / "marker"
    root = "d$(touch marker)`touch marker`;touch marker"
    label = "FedAvg $(touch marker) `touch marker`; ../x | y"
    cfg = copy.deepcopy(ONE_RUN)
    cfg["experiments"]["main"]["algorithms"] = [{"preset": "fedavg", "label": label}]
    (wd / "q.yaml").write_text(yaml.safe_dump({**cfg, "data_root": root}))
    r = snakemake(wd, "--cores", "1", "--configfile", "q.yaml", "--printshellcmds")
    assert r.returncode == 0, r.stderr[-3000:]
    assert (wd / "results/tables/main.md").exists()
    assert not marker.exists()
    # each job's command, as the shell splits it, hands the whole string to --data-root
    cmds = [l.strip() for l in (r.stdout + r.stderr).splitlines() if "--data-root" in l]
    assert len(cmds) == 2, cmds  # partition and train
    for cmd in cmds:
        words = shlex.split(cmd)
        assert words[words.index("--data-root") + 1] == root
    row = next(l for l in (wd / "results/tables/main.md").read_text().splitlines() if l.startswith("| FedAvg"))
    assert label.replace("|", "\\|") in row


@pytest.mark.e2e
def test_a_table_named_with_shell_code_is_refused_before_any_job(tmp_path):
    wd = workdir(tmp_path / "wd")
    cfg = copy.deepcopy(ONE_RUN)
    cfg["tables"] = {"acc$(touch marker)": {"experiment": "main"}}
    (wd / "q.yaml").write_text(yaml.safe_dump(cfg))
    r = snakemake(wd, "--cores", "1", "--configfile", "q.yaml")
    assert r.returncode != 0
    one_line("\n".join(l for l in r.stderr.splitlines() if l.startswith("fedflat:")), "tables.acc$(touch marker)",
             "not a safe name")
    assert not (wd / "marker").exists() and not (wd / "results").exists()


def test_fedflat_validate_refuses_the_same_names(tmp_path, capsys):
    cfg = _rename(TINY, "tables", "../../escape")
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(cfg))
    assert cli(["validate", str(tmp_path / "c.yaml")]) == 2
    one_line(capsys.readouterr().err, "tables.../../escape", "not a safe name")
