"""Join blind hand labels with the key that says which system wrote each summary.

The labeller sees, per dialogue, its summaries in a random order as "summary 1", "summary 2", ...;
the key (one line per dialogue: ``id``, ``row``, and ``"1"``, ``"2"``, ... the system of each position (``a+b``: both wrote it),
``summary1``, ``summary2``, ... the text) stays apart. This writes one line per dialogue and system:
``id``, ``row``, ``system``, ``summary`` and the labels, in row order.

    python benchmarks/studies/merge_labels.py runs/labels/key-25-99.jsonl runs/labels/labels-{2,3,4}.jsonl \
        >> benchmarks/results/samsum/labels/labels.jsonl
"""

from __future__ import annotations

import argparse
import json
import sys

LABELS = ("wrong_person", "unsupported", "ungrammatical", "signable")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("key")
    p.add_argument("labels", nargs="+")
    args = p.parse_args(argv)
    key = {}
    for line in open(args.key, encoding="utf-8"):
        k = json.loads(line)
        key[k["id"]] = k
    rows = []
    for path in args.labels:
        for n, line in enumerate(open(path, encoding="utf-8"), start=1):
            label = json.loads(line)
            k = key.get(label["id"])
            if k is None:
                raise SystemExit(f"{path}:{n}: id {label['id']!r} is not in {args.key}")
            position = str(label["summary"])
            missing = [f for f in LABELS if not isinstance(label.get(f), bool)]
            if missing or position not in k:
                raise SystemExit(f"{path}:{n}: summary {position!r} or labels {missing} missing")
            for system in k[position].split("+"):  # one text that several systems wrote
                rows.append({"id": label["id"], "row": k["row"], "system": system, "summary": k["summary" + position],
                             **{f: label[f] for f in LABELS}, "note": label.get("note", "")})
    rows.sort(key=lambda r: (r["row"], r["system"]))
    for r in rows:
        print(json.dumps(r, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
