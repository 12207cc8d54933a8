"""Blind labelling batches of new systems' summaries of the labelled dialogues.

Per dialogue, the distinct texts that the given systems wrote and that are not already labelled
for that dialogue (in ``--labelled``: a text identical to a labelled one takes its labels), in a
random order (``--seed``), unnamed. The key (``id``, ``row``, ``"1"``, ``"2"``, ...: the systems
that wrote each position, joined by ``+``; ``summary1``, ...) is written apart, for
``merge_labels.py``; ``inherited.jsonl`` holds the inherited labels of identical texts.

    python benchmarks/studies/label_batches.py --dialogues runs/labels/valid100.jsonl \\
        --labelled benchmarks/results/samsum/labels/labels.jsonl \\
        --system lm-0.1=runs/lm/labelled/w-0.1.txt --system control-1=runs/speaker/control-1/labelled-text/summaries.txt \\
        --batches 7 --out runs/labels/round2

``--relabel NAME=SYSTEM`` shows a labelled system's texts again, under a new name, to be labelled
afresh beside the new ones (the same labeller judges them side by side: a comparison that does not
depend on how strict each labeller is). Then no text inherits labels. The larger dialogue model's
second round was labelled by this rule, large2-cov beside v1 and large-cov (3 batches, seed 71),
from batches made by an earlier script; this command makes such batches, not necessarily in the
same order:

    python benchmarks/studies/label_batches.py --dialogues runs/labels/valid100.jsonl \\
        --labelled benchmarks/results/samsum/labels/labels.jsonl --labelled benchmarks/results/samsum/labels/levers.jsonl \\
        --system large2-cov=runs/dialogue-v2b/cov-labelled-text/summaries.txt \\
        --relabel v1-recheck-7=v1 --relabel large-cov-recheck=large-cov --batches 3 --seed 71 --out runs/labels/large2-cov
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--dialogues", required=True)
    p.add_argument("--labelled", action="append", required=True, help="labels (JSONL); may be given more than once")
    p.add_argument("--system", action="append", required=True, metavar="NAME=FILE")
    p.add_argument("--relabel", action="append", default=[], metavar="NAME=SYSTEM",
                   help="a labelled system's texts, shown again under NAME to be labelled afresh; with it, "
                        "no text inherits labels (the new systems' texts are labelled beside these)")
    p.add_argument("--batches", type=int, default=4)
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--out", required=True)
    args = p.parse_args(argv)
    dialogues = [json.loads(line) for line in open(args.dialogues, encoding="utf-8")]
    known: dict[tuple[str, str], dict] = {}
    written: dict[tuple[str, str], str] = {}  # (system, dialogue id) -> its labelled text
    for path in args.labelled:
        for line in open(path, encoding="utf-8"):
            r = json.loads(line)
            known.setdefault((r["id"], r["summary"]), r)
            written.setdefault((r["system"], r["id"]), r["summary"])
    relabel, labelled_systems = {}, {system for system, _ in written}
    for spec in args.system + args.relabel:
        name = spec.split("=", 1)[0]
        if "=" not in spec or not name or "+" in name:
            raise SystemExit(f"{spec!r}: give NAME=FILE (--system) or NAME=SYSTEM (--relabel), a NAME without '+'")
        if name in labelled_systems:
            raise SystemExit(f"{spec!r}: {name} is already labelled in --labelled; give the new labels another name")
    for spec in args.relabel:
        name, system = spec.split("=", 1)
        missing = [d["id"] for d in dialogues if (system, d["id"]) not in written]
        if missing:
            raise SystemExit(f"--relabel {spec}: {system} has no label for {len(missing)} dialogue(s), "
                             f"e.g. {missing[0]}")
        relabel[name] = [written[(system, d["id"])] for d in dialogues]
    systems = {}
    for spec in args.system:
        name, path = spec.split("=", 1)
        systems[name] = Path(path).read_text(encoding="utf-8").splitlines()
        if len(systems[name]) != len(dialogues):
            raise SystemExit(f"{path}: {len(systems[name])} summaries for {len(dialogues)} dialogues")
    rng = random.Random(args.seed)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    keys, batches, inherited = [], [[] for _ in range(args.batches)], []
    for row, d in enumerate(dialogues):
        texts: dict[str, list[str]] = {}
        for name, lines in relabel.items():
            texts.setdefault(lines[row], []).append(name)
        for name, lines in systems.items():
            text = lines[row]
            if not relabel and (d["id"], text) in known:
                inherited.append({**known[(d["id"], text)], "system": name})
            else:
                texts.setdefault(text, []).append(name)
        if not texts:
            continue
        order = list(texts)
        rng.shuffle(order)
        key = {"id": d["id"], "row": row}
        item = {"id": d["id"], "dialogue": d["article"]}
        for k, text in enumerate(order, start=1):
            key[str(k)] = "+".join(texts[text])
            key[f"summary{k}"] = text
            item[f"summary{k}"] = text
        keys.append(key)
        batches[len(keys) % args.batches].append(item)
    for k, batch in enumerate(batches, start=1):
        with open(out / f"batch-{k}.jsonl", "w", encoding="utf-8") as f:
            f.writelines(json.dumps(i, ensure_ascii=False) + "\n" for i in batch)
    with open(out / "key.jsonl", "w", encoding="utf-8") as f:
        f.writelines(json.dumps(k, ensure_ascii=False) + "\n" for k in keys)
    with open(out / "inherited.jsonl", "w", encoding="utf-8") as f:
        f.writelines(json.dumps(r, ensure_ascii=False) + "\n" for r in inherited)
    counts = [sum(len([k for k in i if k.startswith("summary")]) for i in b) for b in batches]
    print(f"{len(keys)} dialogues with new texts, {sum(counts)} texts to label ({counts} per batch); "
          f"{len(inherited)} summaries inherit labels", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
