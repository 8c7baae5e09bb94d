"""A table manifest larger than the kernel's 128 KiB per-argument limit reaches the renderer (the leaderboard's
744-run tuning table failed with exit 126 when it was passed as one argument)."""
import json
import subprocess
import sys

from fedflat.core.util.io import read_manifest


def test_manifest_from_text_file_and_stdin(tmp_path, monkeypatch):
    import io

    m = {"kind": "x", "entries": list(range(3))}
    (tmp_path / "m.json").write_text(json.dumps(m))
    assert read_manifest(json.dumps(m)) == m and read_manifest(f"@{tmp_path / 'm.json'}") == m
    monkeypatch.setattr(sys, "stdin", io.StringIO(json.dumps(m)))
    assert read_manifest("@-") == m


def test_a_manifest_over_the_argument_limit_gets_through_the_rules_shell_pattern(tmp_path):
    big = json.dumps({"kind": "unknown-kind", "pad": "x" * 300_000})  # > MAX_ARG_STRLEN (128 KiB)
    quoted = "'" + big.replace("'", "'\\''") + "'"
    # the pattern of workflow/rules/report.smk; an unknown kind proves the manifest was read and parsed
    cmd = f"printf '%s' {quoted} | {sys.executable} -m fedflat table --manifest @- --out {tmp_path / 't.md'}"
    def run(script: str):  # Snakemake writes the shell command into a script and runs bash on it
        (tmp_path / "s.sh").write_text(script)
        return subprocess.run(["bash", str(tmp_path / "s.sh")], capture_output=True, text=True)

    r = run(cmd)
    assert "unknown-kind" in r.stderr, r.stderr[-500:]
    # passing it as one argument, as the rule did before, cannot even start the process
    assert run(f"{sys.executable} -m fedflat table --manifest {quoted} --out x.md").returncode == 126
