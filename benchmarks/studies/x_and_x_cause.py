"""Where "X and X" comes from: the shipped model's distribution at the slot of the second X.

For every validation summary of the shipped model that names one person twice (``X and X``,
decoded with trigram blocking alone: decoding_controls.py's ``BASE``, not the checkpoint's own search,
whose repeat window forbids ``X and X``), the summary is teacher-forced through the model, and at the second X the
probability of X is split into its generated part (p_gen * P_vocab) and its copied part (the copy
weight summed over X's source positions). The copy weight on the other speaker Y (the speaker the
reference joins with X, else the dialogue's other most frequent speaker) is read at the same slot,
with the number of times X and Y occur in the source: a copy distribution that sums attention over
positions favours the word with more positions.

    python benchmarks/studies/x_and_x_cause.py [--docs 814]
"""

from __future__ import annotations

import argparse
import collections
import json
import re
import statistics
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))

from decoding_controls import VALID, search_for, speakers, x_and_x  # noqa: E402

from agentsum.data.batch import make_batch  # noqa: E402
from agentsum.data.sources import load_examples  # noqa: E402
from agentsum.summarizer import Summarizer  # noqa: E402

REPO = Path(__file__).resolve().parents[2]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=814)
    parser.add_argument("--checkpoint", default=str(REPO / "agentsum" / "pretrained" / "samsum-en.pt"))
    parser.add_argument("--out", default=str(REPO / "benchmarks" / "results" / "samsum" / "x_and_x_cause.json"))
    args = parser.parse_args()
    torch.set_num_threads(1)
    s = Summarizer(args.checkpoint, device="cpu")
    examples = load_examples(str(VALID), end=args.docs)
    docs = s.prepare_examples(examples)
    config = search_for({})  # trigram blocking alone
    rows = []
    for start in range(0, len(docs), 16):
        chunk = docs[start : start + 16]
        batch = make_batch([d.agents for d in chunk], s.vocab)
        _, words = s.decode_batch(batch, config)
        for k, summary in enumerate(words):
            doc, ex = chunk[k], examples[start + k]
            x = x_and_x(" ".join(summary))
            if x is None:
                continue
            tokens = [t.lower() for t in summary]
            slot = next(i + 2 for i in range(len(tokens) - 2) if tokens[i] == x and tokens[i + 1] == "and"
                        and tokens[i + 2] == x)
            counts = collections.Counter(speakers(ex.article))
            others = [sp for sp, _ in counts.most_common() if sp != x]
            ref = ex.summary.lower()
            joined = [o for o in others if re.search(rf"\b{re.escape(x)} and {re.escape(o)}\b|\b{re.escape(o)} and "
                                                    rf"{re.escape(x)}\b", ref)]
            y = (joined or others or [None])[0]
            one = make_batch([doc.agents], s.vocab, summaries=[tokens[: slot + 1]])
            with torch.no_grad():
                dist = s.model(one).dist
            src = one.src_ext_ids.reshape(-1)
            gen_w = float(dist.gen_weight[0, slot].detach())
            p_vocab = torch.softmax(dist.vocab_logits[0, slot].float(), -1)
            x_id = s.vocab.stoi.get(x)
            copy = dist.copy_weight[0, slot].float()

            def copied(word):
                ids = [i for i, w in enumerate(one.oov_words[0]) if w == word]
                wid = s.vocab.stoi.get(word, s.model.vocab_size + ids[0] if ids else -1)
                return float(copy[src == wid].sum()), int((src == wid).sum())

            copy_x, n_x = copied(x)
            copy_y, n_y = copied(y) if y else (0.0, 0)
            rows.append({"id": ex.id, "x": x, "y": y, "reference_joins": bool(joined), "gen_x": gen_w * float(p_vocab[x_id].detach())
                         if x_id is not None else 0.0, "copy_x": copy_x, "copy_y": copy_y, "n_x": n_x, "n_y": n_y,
                         "p_gen": gen_w})
    summary = {
        "cases": len(rows),
        "mean P(X) copied / generated": [statistics.mean(r["copy_x"] for r in rows),
                                         statistics.mean(r["gen_x"] for r in rows)],
        "mean copy weight on X / on Y": [statistics.mean(r["copy_x"] for r in rows),
                                         statistics.mean(r["copy_y"] for r in rows)],
        "mean source occurrences of X / Y": [statistics.mean(r["n_x"] for r in rows),
                                             statistics.mean(r["n_y"] for r in rows)],
        "X occurs more often than Y": sum(r["n_x"] > r["n_y"] for r in rows),
        "copy weight per occurrence X / Y": [statistics.mean(r["copy_x"] / max(r["n_x"], 1) for r in rows),
                                             statistics.mean(r["copy_y"] / max(r["n_y"], 1) for r in rows if r["n_y"])],
        "reference joins X with Y by 'and'": sum(r["reference_joins"] for r in rows),
        "mean p_gen at the slot": statistics.mean(r["p_gen"] for r in rows),
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps({"summary": summary, "rows": rows}, indent=1) + "\n")
    print(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
