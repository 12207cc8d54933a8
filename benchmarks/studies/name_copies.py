"""A dialogue training file with renamed copies (``agentsum.data.names``): every record as it is,
then COPIES copies of each dialogue that can be renamed safely, its participants renamed
consistently in the dialogue and the summary. The names come from the file's own participants;
the ambiguous ones (written in lower case in its summaries) are never used or replaced.

    python benchmarks/studies/name_copies.py ../shared/data/samsum/train.jsonl runs/speaker/names-train.jsonl --seed 1

Prints how many dialogues were renamed and how many left as they were.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from agentsum.data.names import ambiguous_names, name_pool, substitute  # noqa: E402
from agentsum.data.records import json_lines  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("source", type=Path, help="JSONL with article (a dialogue) and summary")
    p.add_argument("out", type=Path)
    p.add_argument("--copies", type=int, default=1, help="renamed copies of each dialogue (default 1)")
    p.add_argument("--seed", type=int, default=1)
    args = p.parse_args(argv)
    if args.copies < 1:
        p.error("--copies must be at least 1")
    rows = []
    for where, row in json_lines(args.source):  # where: "FILE:LINE"
        for key in ("article", "summary"):
            if not isinstance(row.get(key), str):
                p.error(f"{where}: field {key!r} is missing or not text")
        rows.append(row)
    ambiguous = ambiguous_names(r["summary"] for r in rows)
    pool = name_pool((r["article"] for r in rows), ambiguous)
    rng = random.Random(args.seed)
    renamed = kept = 0
    args.out.parent.mkdir(parents=True, exist_ok=True)
    tmp = args.out.with_name(args.out.name + ".tmp")
    with tmp.open("w", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
        for copy in range(args.copies):
            for row in rows:
                new = substitute(row["article"], row["summary"], pool, ambiguous, rng)
                if new is None:
                    kept += copy == 0
                    continue
                renamed += copy == 0
                out = dict(row, article=new[0], summary=new[1])
                if "id" in row:
                    out["id"] = f"{row['id']}/names-{copy + 1}"
                f.write(json.dumps(out, ensure_ascii=False) + "\n")
    tmp.replace(args.out)
    print(f"{args.out}: {len(rows)} records, {renamed} dialogues renamed x{args.copies}, {kept} left as they were "
          f"(a name of more than one word or ambiguous); {len(pool)} names in the pool, {len(ambiguous)} ambiguous words")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
