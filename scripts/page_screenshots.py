"""Screenshots of the web page with a real model, for the docs (docs/serving.md).

Serves CHECKPOINT (the shipped dialogue model when omitted) on a free loopback port, opens the page in
headless Chromium (Debian's chromium + chromium-driver, driven by selenium, as tests/serve/test_web.py),
summarizes one document, clicks a summary sentence (its source sentences are marked, a folded section
they are in opens) and saves the page; with --number, also clicks the first number the source states
(where it is stated is marked) and saves a second picture; with --mark, clicks the first number of each
mark asked for (in_context, elsewhere, absent: what the click shows differs by mark) and saves a picture of
each. --constraint sets a search box under Decoding options before summarizing (the panel is left open,
so the pictures show it).

    python scripts/page_screenshots.py --data ../shared/data/samsum/valid.jsonl --row 0 \
        --out docs/images/web_page_sentence.png
    python scripts/page_screenshots.py --checkpoint runs/ectsum-m6/checkpoints/best.pt \
        --data ../shared/data/ectsum/valid.jsonl --row 3 --sentence 1 --number --height 1500 \
        --out docs/images/web_page_call.png
    python scripts/page_screenshots.py --model calls --data ../shared/data/ectsum/valid.jsonl --row 2 \
        --constraint numbers_from_source=off --constraint numbers_in_context=off \
        --mark in_context --mark elsewhere --mark absent --height 1300 \
        --mark-out 'docs/images/web_page_number_{mark}.png'
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

FLAGS = ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--no-first-run", "--disable-quic", "--disable-extensions"]
#: a search constraint (the request field) and the id of its box on the page (app.js SWITCHES)
BOXES = {"numbers_from_source": "numbers", "figure_grammar": "figure-grammar", "source_periods": "source-periods",
         "numbers_in_context": "numbers-in-context"}
#: a number's mark (the API's claim) and the class the page gives it (app.js NUMBER_CLASS)
MARKS = {"in_context": "num-ok", "elsewhere": "num-elsewhere", "absent": "num-missing"}


def read_row(path: Path, row: int) -> str:
    with path.open(encoding="utf-8") as f:
        for i, line in enumerate(f):
            if i == row:
                record = json.loads(line)
                for field in ("article", "dialogue", "text", "document"):
                    if isinstance(record.get(field), str):
                        return record[field]
                sys.exit(f"{path}:{i + 1}: no article, dialogue, text or document field")
    sys.exit(f"{path} has no row {row}")


def constraint(text: str) -> tuple[str, bool]:
    """NAME=on|off, NAME a search constraint's request field."""
    name, _, value = text.partition("=")
    if name not in BOXES or value not in ("on", "off"):
        raise argparse.ArgumentTypeError(f"{text!r}: want NAME=on or NAME=off, NAME one of {', '.join(BOXES)}")
    return name, value == "on"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--checkpoint", default=None, help="checkpoint (default: the shipped model)")
    parser.add_argument("--model", default=None, metavar="NAME",
                        help="a shipped model by name (dialogue, calls), as agentsum serve --model; not with --checkpoint")
    parser.add_argument("--data", type=Path, required=True, help="JSONL file the document is taken from")
    parser.add_argument("--row", type=int, default=0, help="0-based row of --data (default 0)")
    parser.add_argument("--sentence", type=int, default=0,
                        help="0-based summary sentence to click (default 0); -1: click none (the page as the "
                             "answer first shows it, a long source folded)")
    parser.add_argument("--number", action="store_true",
                        help="also click the first summary number the source states; saves OUT with -number")
    parser.add_argument("--constraint", type=constraint, action="append", default=[], metavar="NAME=on|off",
                        help="tick or untick a search box before summarizing (numbers_from_source, figure_grammar, "
                             "source_periods, numbers_in_context; repeatable); the Decoding options panel is opened")
    parser.add_argument("--mark", choices=list(MARKS), action="append", default=[],
                        help="also click the first summary number with this mark and save a picture of it "
                             "(repeatable); a mark no summary number has is an error")
    parser.add_argument("--mark-out", default=None, metavar="PATTERN",
                        help="where --mark's pictures go: a PNG path with {mark} (default: OUT with -MARK)")
    parser.add_argument("--threads", type=int, default=None, help="torch CPU threads for the model (default: torch's)")
    parser.add_argument("--width", type=int, default=1280)
    parser.add_argument("--height", type=int, default=1000)
    parser.add_argument("--out", type=Path, default=None,
                        help="PNG to write (the clicked sentence); may be left out with --mark-out")
    args = parser.parse_args(argv)
    if args.out is None and args.mark_out is None:
        parser.error("give --out, or --mark with --mark-out")
    if args.mark_out is not None and not args.mark:
        parser.error("--mark-out names --mark's pictures: give --mark")
    if args.mark_out is not None and "{mark}" not in args.mark_out:
        parser.error("--mark-out needs {mark} in it (one picture per mark)")
    if args.number and args.out is None:
        parser.error("--number saves next to --out: give --out")
    if args.model and args.checkpoint:
        parser.error("--model or --checkpoint, not both")

    os.environ.setdefault("SE_OFFLINE", "true")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    from agentsum.checkpoint import default_checkpoint, shipped_checkpoint
    from agentsum.serve.app import background_server, create_app

    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    driver_path = shutil.which("chromedriver")
    if not browser or not driver_path:
        sys.exit("needs chromium and chromedriver: apt-get install -y chromium chromium-driver")
    text = read_row(args.data, args.row)
    checkpoint = args.checkpoint or (shipped_checkpoint(args.model) if args.model else default_checkpoint())
    app = create_app(checkpoint, batch_wait_ms=0, threads=args.threads)
    profile = tempfile.mkdtemp(prefix="agentsum-shots-")
    options = webdriver.ChromeOptions()
    options.binary_location = browser
    for flag in FLAGS + [f"--window-size={args.width},{args.height}", f"--user-data-dir={profile}"]:
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(executable_path=driver_path), options=options)
    try:
        with background_server(app) as url:
            wait = WebDriverWait(driver, 600)
            driver.get(url + "/")
            wait.until(lambda d: "agent" in d.find_element(By.ID, "model-info").text)
            if args.constraint:  # the boxes start as the model decodes (set with the model's information)
                driver.find_element(By.CSS_SELECTOR, "details.options > summary").click()
                for name, on in args.constraint:
                    box = driver.find_element(By.ID, BOXES[name])
                    if box.is_selected() != on:
                        box.click()
            # a long text is set directly: typing 20k characters key by key takes minutes
            driver.execute_script("const a = document.getElementById('article'); a.value = arguments[0];"
                                  "a.dispatchEvent(new Event('input'));", text)
            driver.find_element(By.ID, "summarize").click()
            wait.until(lambda d: "Done" in d.find_element(By.ID, "status").text)
            sentences = driver.find_elements(By.CSS_SELECTOR, "#summary .sentence")
            if args.sentence >= len(sentences):
                sys.exit(f"the summary has {len(sentences)} sentences; --sentence {args.sentence} is past them")
            if args.sentence >= 0:
                sentences[args.sentence].click()
            marked = driver.find_elements(By.CSS_SELECTOR, "#source .src-tok.sent-hl")
            if marked:
                driver.execute_script("arguments[0].scrollIntoView({block: 'center'});", marked[0])
            if args.out is not None:
                args.out.parent.mkdir(parents=True, exist_ok=True)
                driver.save_screenshot(str(args.out))
                print(f"{args.out}: sentence {args.sentence} clicked, {len(marked)} source words marked")
            print(f"summary: {driver.find_element(By.ID, 'summary').text[:300]!r}")
            # --number is the in_context mark saved as OUT-number (and optional: no such number, no picture)
            shots = [("in_context", args.out.with_name(f"{args.out.stem}-number{args.out.suffix}"), False)] \
                if args.number else []
            shots += [(claim, Path(args.mark_out.format(mark=claim)) if args.mark_out else
                       args.out.with_name(f"{args.out.stem}-{claim}{args.out.suffix}"), True) for claim in args.mark]
            for claim, path, required in shots:
                numbers = driver.find_elements(By.CSS_SELECTOR, f"#summary .tok.{MARKS[claim]}")
                if not numbers:
                    if required:
                        sys.exit(f"no summary number is marked {claim}; no picture of it")
                    print(f"no summary number is marked {claim}; no picture {path}")
                    continue
                driver.execute_script("arguments[0].scrollIntoView({block: 'center'});", numbers[0])
                numbers[0].click()
                hit = driver.find_elements(By.CSS_SELECTOR, "#source .src-tok.num-hl")
                sentence = driver.find_elements(By.CSS_SELECTOR, "#source .src-tok.claim-hl")
                if hit:  # the source box scrolls to it; keep the clicked number in the window as well
                    driver.execute_script("arguments[0].scrollIntoView({block: 'nearest'});", hit[0])
                    driver.execute_script("arguments[0].scrollIntoView({block: 'nearest'});", numbers[0])
                path.parent.mkdir(parents=True, exist_ok=True)
                driver.save_screenshot(str(path))
                print(f"{path}: number {numbers[0].text!r} ({claim}) clicked, {len(hit)} source words and "
                      f"{len(sentence)} words of its source sentence marked; "
                      f"{driver.find_element(By.ID, 'attn-detail').text!r}")
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
