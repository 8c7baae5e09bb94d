"""`python -m fedflat.analysis hessian` on the clients' data computes one spectrum per client; its log shows how far
it has got (announced) without touching what it computes."""
import time

from fedflat.pipeline.analysis.analysis_commands import announced


def test_a_clients_hessian_announces_its_progress_and_passes_every_pair_through(capsys):
    pairs = [(f"model{i}", f"batches{i}") for i in range(25)]
    seen = []
    for pair in announced(iter(pairs), len(pairs), "hessian (clients)", time.perf_counter()):
        seen.append(pair)
    assert seen == pairs
    lines = capsys.readouterr().err.splitlines()
    assert [line.split(",")[0] for line in lines] == ["hessian (clients): 10 of 25 spectra",
                                                      "hessian (clients): 20 of 25 spectra"]
