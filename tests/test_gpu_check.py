"""scripts/gpu_check.sh on the CPU (DEVICE=cpu): every step of the GPU check runs, smaller, and the
table it prints has a row for each with a measured tokens/s."""

import os
import re
import subprocess

from conftest import REPO

ROWS = ["train m6-fp32", "train m6-bf16", "train lcsts-small-fp32", "train lcsts-small-bf16", "torchrun", "decode",
        "serve"]


def test_the_gpu_check_runs_every_step_on_the_cpu(tmp_path):
    env = dict(os.environ, DEVICE="cpu", OUT_DIR=str(tmp_path / "gpu_check"), OMP_NUM_THREADS="1")
    done = subprocess.run(["bash", str(REPO / "scripts" / "gpu_check.sh")], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=900)
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    table = done.stdout
    assert table == (tmp_path / "gpu_check" / "table.md").read_text(encoding="utf-8")
    lines = [line for line in table.splitlines() if line.startswith("| ") and not line.startswith("| step")]
    cells = [[c.strip() for c in line.strip("|").split("|")] for line in lines]
    assert [c[0] for c in cells] == ROWS
    for step, what, rate, result in cells:
        assert re.fullmatch(r"\d+", rate) and int(rate) > 0, (step, rate)
        assert "FAILED" not in result, (step, result)
    serve = cells[-1]
    assert "HTTP 200 on cpu" in serve[3] and "with attention" in serve[3]
    assert "2 process(es) (gloo)" in cells[4][1]
