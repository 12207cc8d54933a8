"""The web page in a real headless Chromium (Debian's chromium + chromium-driver, driven by selenium).

`bash scripts/test.sh` installs the browser and its driver where it can (`apt-get install -y chromium
chromium-driver`, as .ci/run does). Where they are missing, these tests are skipped and the end of the
run says so, with the command that enables them; under CI (`CI=true`) a missing browser FAILS them.
AGENTSUM_INSTALL_BROWSER=1 lets the test install them itself. A screenshot of the page is saved to
test-artifacts/web_page.png.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
from conftest import BROWSER_SKIP, REPO, synthetic_rows

ARTIFACTS = REPO / "test-artifacts"
INSTALL_HINT = ("the web test needs Chromium and ChromeDriver: install them with "
                "`apt-get install -y chromium chromium-driver` (Debian/Ubuntu, as root), or run the tests with "
                "AGENTSUM_INSTALL_BROWSER=1 to let the test install them")
CHROMIUM_FLAGS = ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync",
                  "--no-first-run", "--disable-quic", "--disable-extensions", "--window-size=1280,1000"]


def _find(names: list[str]) -> str | None:
    for name in names:
        path = shutil.which(name) or (f"/usr/bin/{name}" if Path(f"/usr/bin/{name}").exists() else None)
        if path:
            return path
    return None


def browser_paths() -> tuple[str, str]:
    """(chromium, chromedriver) paths; installs them with apt-get when AGENTSUM_INSTALL_BROWSER=1."""
    browser, driver = _find(["chromium", "chromium-browser"]), _find(["chromedriver"])
    if (browser is None or driver is None) and os.environ.get("AGENTSUM_INSTALL_BROWSER") == "1":
        sudo = [] if os.geteuid() == 0 else ["sudo"]
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        install = sudo + ["apt-get", "install", "-y", "-qq", "chromium", "chromium-driver"]
        if subprocess.run(install, check=False, env=env, capture_output=True).returncode != 0:
            subprocess.run(sudo + ["apt-get", "update", "-qq"], check=False, env=env, capture_output=True)
            done = subprocess.run(install, check=False, env=env, capture_output=True, text=True)
            if done.returncode != 0:
                pytest.fail(f"apt-get could not install chromium/chromium-driver: {done.stderr[-500:]}")
        browser, driver = _find(["chromium", "chromium-browser"]), _find(["chromedriver"])
    if browser is None or driver is None:
        missing = " and ".join(n for n, p in (("chromium", browser), ("chromedriver", driver)) if p is None)
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail(f"{missing} not found (CI must test the web page): {INSTALL_HINT}")
        pytest.skip(f"{BROWSER_SKIP}{missing} not found; {INSTALL_HINT}")
    return browser, driver


@pytest.fixture(scope="module")
def server(tiny_run):
    from agentsum.serve.app import background_server, create_app

    app = create_app(tiny_run["checkpoint"], batch_wait_ms=0)
    with background_server(app) as url:
        yield url


@pytest.fixture(scope="module")
def driver():
    os.environ.setdefault("SE_OFFLINE", "true")  # never let Selenium Manager download anything
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        pytest.fail("the web test needs selenium: pip install selenium")
    browser, chromedriver = browser_paths()
    options = webdriver.ChromeOptions()
    options.binary_location = browser
    profile = tempfile.mkdtemp(prefix="agentsum-chromium-")
    for flag in CHROMIUM_FLAGS + [f"--user-data-dir={profile}"]:
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    drv = webdriver.Chrome(service=Service(executable_path=chromedriver), options=options)
    drv.set_page_load_timeout(30)
    try:
        yield drv
    finally:
        drv.quit()
        shutil.rmtree(profile, ignore_errors=True)


def _article() -> str:
    return synthetic_rows(1, seed=11)[0]["article"]


def test_page_summarizes_and_highlights_attention(server, driver):
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support import expected_conditions as EC
    from selenium.webdriver.support.ui import WebDriverWait

    wait = WebDriverWait(driver, 30)
    driver.get(server + "/")
    assert "agentsum" in driver.title
    wait.until(lambda d: "agents" in d.find_element(By.ID, "model-info").text)

    article = driver.find_element(By.ID, "article")
    article.send_keys(_article())
    driver.find_element(By.CSS_SELECTOR, "details.options > summary").click()
    driver.find_element(By.ID, "min-length").send_keys("12")
    driver.find_element(By.ID, "summarize").click()

    wait.until(EC.presence_of_element_located((By.CSS_SELECTOR, "#summary .tok")))
    assert driver.find_element(By.ID, "error").get_attribute("hidden") is not None
    tokens = driver.find_elements(By.CSS_SELECTOR, "#summary .tok")
    assert len(tokens) >= 12

    # The source is shown split by agent, every agent in its own band.
    bands = driver.find_elements(By.CSS_SELECTOR, "#source .agent-band")
    assert len(bands) == 3
    assert driver.find_elements(By.CSS_SELECTOR, "#source .src-tok")
    assert not driver.find_elements(By.CSS_SELECTOR, "#source .src-tok.highlight")

    # Hovering a summary word highlights (at most 5) source words it attended to.
    ActionChains(driver).move_to_element(tokens[2]).perform()
    wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "#source .src-tok.highlight"))
    lit = driver.find_elements(By.CSS_SELECTOR, "#source .src-tok.highlight")
    assert 1 <= len(lit) <= 5
    assert len(driver.find_elements(By.CSS_SELECTOR, "#source .src-tok.highlight.top")) == 1
    assert all(s.value_of_css_property("background-color") not in ("rgba(0, 0, 0, 0)", "transparent") for s in lit)
    assert "class" in tokens[2].get_attribute("outerHTML") and "active" in tokens[2].get_attribute("class")
    assert driver.find_elements(By.CSS_SELECTOR, "#attn-detail .chip")

    # One agent bar per sentence; its segments share 100% of the width.
    bars = driver.find_elements(By.CSS_SELECTOR, "#summary .agent-bar")
    assert len(bars) == len(driver.find_elements(By.CSS_SELECTOR, "#summary .sentence")) >= 1
    widths = driver.execute_script(
        "return [...arguments[0].querySelectorAll('.agent-seg')].map(s => parseFloat(s.style.width));", bars[0])
    assert len(widths) == 3 and abs(sum(widths) - 100) < 0.5

    # Keyboard: focusing another word moves the highlight; Escape clears it.
    driver.execute_script("arguments[0].focus();", tokens[5])
    assert "active" in tokens[5].get_attribute("class")
    assert "active" not in tokens[2].get_attribute("class")
    assert driver.find_elements(By.CSS_SELECTOR, "#source .src-tok.highlight")
    ActionChains(driver).send_keys(Keys.ESCAPE).perform()
    assert not driver.find_elements(By.CSS_SELECTOR, "#source .src-tok.highlight")

    # A screenshot of the whole page for people to look at, with one summary word hovered.
    ARTIFACTS.mkdir(exist_ok=True)
    height = driver.execute_script("return document.documentElement.scrollHeight;")
    driver.set_window_size(1280, min(max(height + 200, 800), 2400))
    driver.execute_script("window.scrollTo(0, 0); document.activeElement.blur();")
    ActionChains(driver).move_to_element(driver.find_elements(By.CSS_SELECTOR, "#summary .tok")[3]).perform()
    wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "#source .src-tok.highlight"))
    driver.save_screenshot(str(ARTIFACTS / "web_page.png"))
    assert (ARTIFACTS / "web_page.png").stat().st_size > 10_000

    severe = [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]
    assert not severe, f"browser console errors: {severe}"


def test_page_upload_and_errors(server, driver, tmp_path):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    wait = WebDriverWait(driver, 30)
    driver.get(server + "/")
    # Summarizing nothing shows a message instead of calling the server.
    driver.find_element(By.ID, "summarize").click()
    error = driver.find_element(By.ID, "error")
    wait.until(lambda d: error.is_displayed())
    assert "article" in error.text.lower()

    # Uploading a .txt file fills the text area.
    path = tmp_path / "article.txt"
    path.write_text(_article(), encoding="utf-8")
    driver.find_element(By.ID, "file").send_keys(str(path))
    wait.until(lambda d: d.find_element(By.ID, "article").get_property("value") == _article())

    # A server-side refusal is shown as the server's message.
    driver.find_element(By.CSS_SELECTOR, "details.options > summary").click()
    driver.find_element(By.ID, "max-length").send_keys("5")
    driver.find_element(By.ID, "min-length").send_keys("9")
    driver.find_element(By.ID, "summarize").click()
    wait.until(lambda d: d.find_element(By.ID, "error").is_displayed())
    assert "min_length" in driver.find_element(By.ID, "error").text
    severe = [e for e in driver.get_log("browser") if e["level"] == "SEVERE" and "422" not in e["message"]]
    assert not severe, f"browser console errors: {severe}"


@pytest.fixture(scope="module")
def dialogue_server():
    """The shipped dialogue model (trained on SAMSum chats, data.dialogue: true)."""
    from agentsum.checkpoint import default_checkpoint
    from agentsum.serve.app import background_server, create_app

    app = create_app(default_checkpoint(), batch_wait_ms=0, threads=1)
    with background_server(app) as url:
        yield url


def test_page_fits_a_dialogue_model_and_shows_one_utterance_per_line(dialogue_server, driver):
    """For a dialogue model the page asks for a chat and offers one as its example; the source panel
    shows each utterance on its own line as written (speaker first, no space before punctuation, no
    split clitics), and the header counts one agent in the singular and names its score as the
    selection score of training."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as EC
    from selenium.webdriver.support.ui import WebDriverWait

    wait = WebDriverWait(driver, 60)
    driver.get(dialogue_server + "/")
    wait.until(lambda d: "agent" in d.find_element(By.ID, "model-info").text)
    info = driver.find_element(By.ID, "model-info").text
    assert "· 1 agent ·" in info and "agents" not in info
    # the header names its score for what it is: the selection score of training, not a test ROUGE
    assert info.endswith("· selection: greedy ROUGE-L 36.1 on 200 validation dialogues during training"), info
    assert "valid_rougeL" not in info
    title = driver.find_element(By.ID, "model-info").get_attribute("title")
    assert "greedy summaries of the first 200 validation dialogues" in title and "Not a test score" in title
    article = driver.find_element(By.ID, "article")
    assert "chat" in article.get_attribute("placeholder") and "news" not in article.get_attribute("placeholder")
    driver.find_element(By.ID, "example").click()
    lines = article.get_attribute("value").split("\n")
    assert len(lines) >= 5 and all(": " in line for line in lines)  # a chat, Name: text
    driver.find_element(By.ID, "summarize").click()
    wait.until(EC.presence_of_element_located((By.CSS_SELECTOR, "#summary .tok")))
    shown = driver.find_element(By.CSS_SELECTOR, "#source .agent-band p").text.split("\n")
    assert shown == lines
    ARTIFACTS.mkdir(exist_ok=True)
    driver.save_screenshot(str(ARTIFACTS / "web_page_dialogue.png"))
    severe = [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]
    assert not severe, f"browser console errors: {severe}"


def _sentence_texts(driver) -> list[str]:
    from selenium.webdriver.common.by import By

    return [p.text for p in driver.find_elements(By.CSS_SELECTOR, "#summary .sentence-text")]


def test_try_an_example_summarizes_the_example(server, driver):
    """After a summary of one text, "Try an example" takes it off the screen and shows the example's
    own summary: the one the API gives for the example's text."""
    import httpx
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    wait = WebDriverWait(driver, 60)
    driver.get(server + "/")
    wait.until(lambda d: "agents" in d.find_element(By.ID, "model-info").text)
    driver.find_element(By.ID, "article").send_keys(_article())
    driver.find_element(By.CSS_SELECTOR, "details.options > summary").click()
    driver.find_element(By.ID, "min-length").send_keys("8")
    driver.find_element(By.ID, "summarize").click()
    wait.until(lambda d: "Done" in d.find_element(By.ID, "status").text)
    before = _sentence_texts(driver)
    source_before = driver.find_element(By.ID, "source").text
    assert before and source_before

    driver.find_element(By.ID, "example").click()
    example = driver.find_element(By.ID, "article").get_property("value")
    assert example != _article()
    # at once: nothing of the previous text's summary stays beside the example
    assert not driver.find_element(By.ID, "results").is_displayed() or _sentence_texts(driver) != before
    wait.until(lambda d: "Done" in d.find_element(By.ID, "status").text)
    expected = httpx.post(server + "/v1/summarize", json={"text": example, "min_length": 8, "attention": True},
                          timeout=60).json()
    (summary,) = expected["summaries"]
    assert _sentence_texts(driver) == summary["sentences"]
    shown_source = " ".join(driver.find_element(By.ID, "source").text.split())
    assert " ".join(summary["attention"]["source_words"][0][:4]) in shown_source
    assert shown_source != " ".join(source_before.split())
    assert driver.find_element(By.ID, "summarize").is_enabled()
    severe = [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]
    assert not severe, f"browser console errors: {severe}"


def test_the_page_asks_for_the_kind_of_text_the_server_names_and_its_example_is_the_servers(server, driver):
    """The text box's label and placeholder follow /v1/example's kind (here made a call, as the calls
    model's is), and "Try an example" loads the server's example text."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    call = {"kind": "call", "text": "Revenue for the quarter was $412.6 million, up 9%.\nWe expect EPS of $4.45."}
    script = ("const fetchFromServer = window.fetch; window.fetch = (url, options) => url === '/v1/example' ? "
              f"Promise.resolve(new Response(JSON.stringify({json.dumps(call)}), "
              "{headers: {'Content-Type': 'application/json'}})) : fetchFromServer(url, options);")
    added = driver.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": script})
    try:
        wait = WebDriverWait(driver, 30)
        driver.get(server + "/")
        wait.until(lambda d: "agents" in d.find_element(By.ID, "model-info").text)
        assert driver.find_element(By.CSS_SELECTOR, 'label[for="article"]').text == "Paste a call transcript"
        assert "earnings call" in driver.find_element(By.ID, "article").get_attribute("placeholder")
        driver.find_element(By.ID, "example").click()
        assert driver.find_element(By.ID, "article").get_property("value") == call["text"]
        wait.until(lambda d: "Done" in d.find_element(By.ID, "status").text)
    finally:
        driver.execute_cdp_cmd("Page.removeScriptToEvaluateOnNewDocument", {"identifier": added["identifier"]})


def _canned_answer(sentences: list[list[str]], source_words: list[str]) -> dict:
    """A /v1/summarize answer with these summary words and one agent's source words."""
    from agentsum.data.readable import detokenize

    words = [w for sentence in sentences for w in sentence]
    spans, start = [], 0
    for sentence in sentences:
        spans.append({"start": start, "end": start + len(sentence), "agent": [1.0]})
        start += len(sentence)
    per_token = [{"agent": [1.0], "source": [{"agent": 0, "index": 0, "word": source_words[0].lower(),
                                              "weight": 0.9}]} for _ in words]
    attention = {"agents": 1, "source_tokens": [[w.lower() for w in source_words]], "source_words": [source_words],
                 "source_lines": [[0]], "per_token": per_token, "sentences": spans}
    texts = [detokenize(sentence) for sentence in sentences]
    return {"summaries": [{"summary": "\n".join(texts), "sentences": texts, "tokens": [w.lower() for w in words],
                           "words": words, "attention": attention}],
            "model": {"checkpoint": "canned.pt", "step": 1}, "elapsed_ms": 1.0}


def _show_canned(server, driver, answer: dict) -> None:
    """Open the page, make its /v1/summarize answer ``answer``, and summarize."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    wait = WebDriverWait(driver, 30)
    driver.get(server + "/")
    wait.until(lambda d: "agents" in d.find_element(By.ID, "model-info").text)
    driver.execute_script("""
        const answer = arguments[0];
        const fetchFromServer = window.fetch;
        window.fetch = (url, options) => url === '/v1/summarize'
          ? Promise.resolve(new Response(JSON.stringify(answer), {headers: {'Content-Type': 'application/json'}}))
          : fetchFromServer(url, options);
    """, answer)
    driver.find_element(By.ID, "article").send_keys("Any text: the answer is canned.")
    driver.find_element(By.ID, "summarize").click()
    wait.until(lambda d: "Done" in d.find_element(By.ID, "status").text)


#: Glyph boxes (without the spans' padding) of every summary word, and whether it is drawn against
#: the word before it.
GLYPHS = """
return [...document.querySelectorAll('#summary .tok')].map((span) => {
  const range = document.createRange();
  range.selectNodeContents(span.firstChild);
  const box = range.getBoundingClientRect();
  return {text: span.textContent, left: box.left, right: box.right, top: box.top,
          joined: span.classList.contains('joined')};
});
"""


def test_summary_words_read_as_the_summary_text_and_placeholders_as_written(server, driver):
    """The summary's word spans are spaced as the API's text (agentsum.data.readable.detokenize):
    a clitic or punctuation touches the word before it, with no gap drawn between the spans, and a
    currency sign the amount after it but not a word; the
    summary and the source panel show SAMSum's <file_gif>-like placeholders as one word, as written."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    sentences = [["Hannah", "does", "n't", "have", "Betty", "'s", "number", "."],
                 ["She", "'ll", "text", "Larry", "(", "he", "'s", "nice", ")", "at", "$", "5", "or", "$", "per", "hour",
                  "@", "home", "..."],
                 ["He", "said", '"', "I", "ca", "N'T", "come", '"', "and", "left", "."],
                 ["Amanda", "sent", "<", "file_gif", ">", "."]]
    source = ["Hannah", ":", "<", "file_gif", ">", "Amanda", ":", "<", "file", ":", "photo", ">", "ok",
              "Tom", ":", "2", "<", "3", "and", "a", "<", "b", "c", "d", "e", ">", "!"]
    answer = _canned_answer(sentences, source)
    _show_canned(server, driver, answer)

    assert _sentence_texts(driver) == answer["summaries"][0]["sentences"] == [
        "Hannah doesn't have Betty's number.", "She'll text Larry (he's nice) at $5 or $ per hour @home...",
        'He said "I caN\'T come" and left.', "Amanda sent <file_gif>."]
    glyphs = driver.execute_script(GLYPHS)
    assert [g["text"] for g in glyphs] == [w for sentence in sentences for w in sentence]
    for before, word in zip(glyphs, glyphs[1:]):
        if word["top"] != before["top"]:
            continue  # another line
        gap = word["left"] - before["right"]
        if word["joined"]:
            assert abs(gap) < 1, f"{before['text']!r} and {word['text']!r} drawn {gap:.1f}px apart"
        else:
            assert gap > 2, f"{before['text']!r} {word['text']!r}: no space between them"
    joined = {g["text"] for g in glyphs if g["joined"]}
    assert {"n't", "'s", "'ll", ".", ")", "he", "5", "home", "I", "N'T", '"', "file_gif", ">"} <= joined  # "I after the quote
    assert not {"have", "Betty", "number", "text", "come", "and", "per"} & joined  # $ before a word: apart

    assert driver.find_element(By.CSS_SELECTOR, "#source .agent-band p").text == \
        "Hannah: <file_gif> Amanda: <file:photo> ok Tom: 2 < 3 and a < b c d e >!"


#: A chat as SAMSum writes them: placeholders for attachments, clitics, a speaker's name with 's.
CHAT = """Hannah: Hey, do you have Betty's number?
Amanda: Lemme check
Amanda: <file_gif>
Amanda: Sorry, can't find it.
Amanda: Ask Larry, he called her last time we were at the park together
Larry: <file_photo>
Hannah: I don't know him well
Amanda: Don't be shy, he's very nice"""


def test_the_shipped_model_page_shows_a_chat_as_written_and_the_summary_as_the_api_writes_it(
        dialogue_server, driver):
    import httpx
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    wait = WebDriverWait(driver, 60)
    driver.get(dialogue_server + "/")
    wait.until(lambda d: "agent" in d.find_element(By.ID, "model-info").text)
    driver.find_element(By.ID, "article").send_keys(CHAT)
    driver.find_element(By.ID, "summarize").click()
    wait.until(lambda d: "Done" in d.find_element(By.ID, "status").text)
    assert driver.find_element(By.CSS_SELECTOR, "#source .agent-band p").text.split("\n") == CHAT.split("\n")
    expected = httpx.post(dialogue_server + "/v1/summarize", json={"text": CHAT}, timeout=60).json()
    assert _sentence_texts(driver) == expected["summaries"][0]["sentences"]
    glyphs = driver.execute_script(GLYPHS)
    for before, word in zip(glyphs, glyphs[1:]):
        if word["joined"] and word["top"] == before["top"]:
            assert abs(word["left"] - before["right"]) < 1, (before["text"], word["text"])


def _long_answer(agents: int = 3) -> dict:
    """A canned answer over a long source (``agents`` x 300 tokens, a sentence every 10 tokens) with
    provenance: sentence 1 rests on agent 2's eighth sentence, sentence 2 on agent 1's first; "2.5"
    is stated at agent 3's token 50, "1.10" nowhere."""
    source = [[f"a{a}s{i // 10}w{i % 10}" if i % 10 < 9 else "." for i in range(300)] for a in range(agents)]
    share = [0.2, 0.5, 0.3] + [0.0] * (agents - 3)
    sentences = [["Revenue", "rose", "2.5", "%", "."], ["EPS", "was", "$", "1.10", "."]]
    answer = _canned_answer(sentences, source[0])
    words = [w for sentence in sentences for w in sentence]
    attention = answer["summaries"][0]["attention"]
    attention.update(agents=agents, source_words=source, source_tokens=source,
                     source_lines=[list(range(0, 300, 10))] * agents)
    for step in attention["per_token"]:
        step["agent"] = share
    for span in attention["sentences"]:
        span["agent"] = share

    def word(j, number=None):
        return {"word": words[j], "token": words[j].lower(), "copied": True, "p_gen": 0.1, "copy_mass": 0.9,
                "source": 0, "source_word": source[0][0], "agent": 0, "agent_index": 0, "number": number}

    numbers = {2: {"supported": True, "occurrences": [600 + 50]}, 8: {"supported": False, "occurrences": []}}
    answer["summaries"][0]["provenance"] = {
        "words": [word(j, numbers.get(j)) for j in range(len(words))],
        "sentences": [
            {"text": "Revenue rose 2.5%.", "start": 0, "end": 5, "source_sentences": [
                {"agent": 1, "line": 7, "start": 70, "end": 80, "share": 0.6, "text": "..."}]},
            {"text": "EPS was $1.10.", "start": 5, "end": 10, "source_sentences": [
                {"agent": 0, "line": 0, "start": 0, "end": 10, "share": 0.5, "text": "..."}]}]}
    return answer


#: per agent section: folded or not, and how many of its source words are on screen
BANDS = """
return [...document.querySelectorAll('#source .agent-band')].map((band) => ({
  folded: band.classList.contains('folded'),
  shown: [...band.querySelectorAll('.src-tok')].filter((s) => s.offsetParent !== null).length,
  toggle: (band.querySelector('.fold-toggle') || {}).textContent || null}));
"""
MARKED = """
return [...document.querySelectorAll('#source .src-tok.' + arguments[0])].map(
  (s) => [Number(s.dataset.agent), Number(s.dataset.index), s.offsetParent !== null]);
"""


def test_a_long_source_folds_and_a_click_on_a_sentence_or_number_opens_where_it_leads(server, driver):
    """A source of 900 tokens shows each agent's first two lines, the rest folded. Clicking a summary
    sentence marks its source sentences and opens the folded section they are in; a number the text
    states is marked and, clicked, marks where; a number it does not state is marked as such."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    answer = _long_answer()
    _show_canned(server, driver, answer)

    assert driver.execute_script(BANDS) == [{"folded": True, "shown": 20, "toggle": "Show 28 more lines"}] * 3
    tokens = driver.find_elements(By.CSS_SELECTOR, "#summary .tok")
    assert [t.text for t in tokens if "num-ok" in t.get_attribute("class")] == ["2.5"]
    assert [t.text for t in tokens if "num-missing" in t.get_attribute("class")] == ["1.10"]

    # the first sentence rests on agent 2's eighth sentence, in its folded part: it opens, marked
    driver.find_elements(By.CSS_SELECTOR, "#summary .sentence")[0].click()
    assert driver.execute_script(MARKED, "sent-hl") == [[1, i, True] for i in range(70, 80)]
    bands = driver.execute_script(BANDS)
    assert [b["folded"] for b in bands] == [True, False, True] and bands[1]["shown"] == 300
    assert bands[1]["toggle"] == "Fold"
    assert "selected" in driver.find_elements(By.CSS_SELECTOR, "#summary .sentence")[0].get_attribute("class")
    assert "agent 1, line 7 (60%)" in driver.find_element(By.ID, "attn-detail").text  # as in the JSON
    ARTIFACTS.mkdir(exist_ok=True)
    driver.save_screenshot(str(ARTIFACTS / "web_page_long.png"))

    # the number links to where the text states it: agent 3, token 50, opened; the sentence marks go
    next(t for t in tokens if t.text == "2.5").click()
    assert driver.execute_script(MARKED, "num-hl") == [[2, 50, True]]
    assert driver.execute_script(MARKED, "sent-hl") == []
    assert [b["folded"] for b in driver.execute_script(BANDS)] == [True, False, False]
    next(t for t in tokens if t.text == "1.10").click()
    assert driver.execute_script(MARKED, "num-hl") == []
    assert "is not in the text" in driver.find_element(By.ID, "attn-detail").text

    # the second sentence rests on agent 1's first sentence, never folded; the fold button folds back
    driver.find_elements(By.CSS_SELECTOR, "#summary .sentence")[1].click()
    assert driver.execute_script(MARKED, "sent-hl") == [[0, i, True] for i in range(10)]
    driver.find_elements(By.CSS_SELECTOR, "#source .fold-toggle")[1].click()
    assert driver.execute_script(BANDS)[1] == {"folded": True, "shown": 20, "toggle": "Show 28 more lines"}


def test_agents_lines_and_tokens_count_from_0_on_the_page_as_in_the_json(server, driver):
    """The page names agents, lines and token positions by the numbers the JSON gives them (from 0):
    the legend, the sections, the bar's segments, a word's source chips and a sentence's source
    sentences."""
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By

    answer = _long_answer()
    step = answer["summaries"][0]["attention"]["per_token"][0]
    step["source"] = [{"agent": 2, "index": 15, "word": "a2s1w5", "weight": 0.9}]
    _show_canned(server, driver, answer)
    assert [li.text for li in driver.find_elements(By.CSS_SELECTOR, "#legend li")] == ["Agent 0", "Agent 1", "Agent 2"]
    heads = [h.text for h in driver.find_elements(By.CSS_SELECTOR, "#source .agent-band h3")]
    assert [h.split(" ·")[0] for h in heads] == ["AGENT 0", "AGENT 1", "AGENT 2"]  # upper-cased by the style
    segments = driver.find_elements(By.CSS_SELECTOR, "#summary .agent-bar")[0].find_elements(By.CSS_SELECTOR,
                                                                                               ".agent-seg")
    assert [s.get_attribute("title") for s in segments] == ["Agent 0: 20%", "Agent 1: 50%", "Agent 2: 30%"]
    assert "counted from 0" in driver.find_element(By.ID, "counting").text
    # the first word's source chip names agent 2, token 15: the JSON's agent and index
    ActionChains(driver).move_to_element(driver.find_elements(By.CSS_SELECTOR, "#summary .tok")[0]).perform()
    chip = driver.find_element(By.CSS_SELECTOR, "#attn-detail .chip")
    assert chip.get_attribute("title") == "agent 2, token 15"
    assert "agents: 0: 20%, 1: 50%, 2: 30%" in driver.find_element(By.ID, "attn-detail").text
    assert driver.execute_script(MARKED, "highlight") == [[2, 15, True]]
    # the first sentence's source sentence is agent 1's line 7 in the JSON, and on the page
    (source,) = answer["summaries"][0]["provenance"]["sentences"][0]["source_sentences"]
    driver.find_elements(By.CSS_SELECTOR, "#summary .sentence")[0].click()
    assert driver.find_element(By.ID, "attn-detail").text == \
        f"This sentence rests on agent {source['agent']}, line {source['line']} (60%)."
    assert driver.execute_script(MARKED, "sent-hl")[0] == [source["agent"], source["start"], True]


def _claims_answer() -> dict:
    """The long canned answer with four numbers, one of each mark: "1.21" stated for EPS at agent 2,
    token 50 (and elsewhere at 100); "3.7" in the source but never beside EBITDA, copied from agent 1,
    token 120; "12" not in the source; "40" in the source, its sentence naming no metric."""
    answer = _long_answer()
    sentences = [["EPS", "was", "$", "1.21", "."], ["EBITDA", "was", "$", "3.7", "billion", "."],
                 ["Revenue", "rose", "12", "%", "."], ["It", "added", "40", "stores", "."]]
    canned = _canned_answer(sentences, [f"w{i}" for i in range(10)])["summaries"][0]
    summary = answer["summaries"][0]
    summary.update({k: canned[k] for k in ("summary", "sentences", "tokens", "words")})
    share = summary["attention"]["per_token"][0]["agent"]
    summary["attention"]["per_token"] = [{"agent": share, "source": []} for _ in canned["words"]]
    summary["attention"]["sentences"] = [{**span, "agent": share} for span in canned["attention"]["sentences"]]
    records = {
        3: {"supported": True, "occurrences": [100, 650], "claim": "in_context", "metric": "eps",
            "context_occurrences": [650]},
        8: {"supported": True, "occurrences": [305, 420], "claim": "elsewhere", "metric": "ebitda",
            "context_occurrences": []},
        13: {"supported": False, "occurrences": [], "claim": "absent", "metric": "revenue", "context_occurrences": []},
        18: {"supported": True, "occurrences": [15], "claim": "in_context", "metric": None, "context_occurrences": [15]},
    }
    words = [{"word": w, "token": w.lower(), "copied": True, "p_gen": 0.1, "copy_mass": 0.9, "source": 0,
              "source_word": "a0s0w0", "agent": 0, "agent_index": 0, "number": records.get(j)}
             for j, w in enumerate(canned["words"])]
    words[8].update(source=420, source_word="a1s12w0", agent=1, agent_index=120)  # copied from agent 1's line 12
    spans = canned["attention"]["sentences"]
    summary["provenance"] = {"words": words, "sentences": [
        {"text": text, "start": span["start"], "end": span["end"], "source_sentences": []}
        for text, span in zip(canned["sentences"], spans)]}
    return answer


def test_each_number_is_marked_stated_for_its_metric_stated_for_something_else_or_not_in_the_call(server, driver):
    """The three marks of a summary's numbers, from the records' claims, under a calls model (the page
    calls the source "the call"): each with its own class, tooltip naming the metric and legend
    entry; a click links an in-context number to the sentence stating it for the metric, and a number
    stated for something else to the sentence it was copied from, with that sentence's text."""
    from selenium.webdriver.common.by import By

    call = {"kind": "call", "text": "Revenue was $412.6 million."}
    script = ("const fetchFromServer = window.fetch; window.fetch = (url, options) => url === '/v1/example' ? "
              f"Promise.resolve(new Response(JSON.stringify({json.dumps(call)}), "
              "{headers: {'Content-Type': 'application/json'}})) : fetchFromServer(url, options);")
    added = driver.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": script})
    try:
        _show_canned(server, driver, _claims_answer())
    finally:
        driver.execute_cdp_cmd("Page.removeScriptToEvaluateOnNewDocument", {"identifier": added["identifier"]})
    numbers = {t.text: t for t in driver.find_elements(By.CSS_SELECTOR, "#summary .tok.num")}
    assert {text: t.get_attribute("data-claim") for text, t in numbers.items()} == {
        "1.21": "in_context", "3.7": "elsewhere", "12": "absent", "40": "in_context"}
    assert "num-ok" in numbers["1.21"].get_attribute("class") and "num-ok" in numbers["40"].get_attribute("class")
    assert "num-elsewhere" in numbers["3.7"].get_attribute("class")
    assert "num-missing" in numbers["12"].get_attribute("class")
    assert numbers["1.21"].get_attribute("title") == "In the call, stated for eps: click to see the sentence that states it"
    assert numbers["3.7"].get_attribute("title") == \
        "In the call, but stated for something else, not for ebitda: click to see the sentence it was copied from"
    assert numbers["12"].get_attribute("title") == "Not in the call: check it before you use it"
    assert numbers["40"].get_attribute("title").startswith("In the call (the summary names no metric for it)")
    legend = driver.find_element(By.ID, "number-legend")
    assert legend.is_displayed()
    assert [k.text for k in legend.find_elements(By.CSS_SELECTOR, ".num-key")] == ["✓", "≠", "?"]
    assert "in the call, but stated for something else" in legend.text and "not in the call" in legend.text
    detail = driver.find_element(By.ID, "attn-detail")

    # in the call for EPS: linked to context_occurrences[0] (agent 2, token 50), not to occurrences[0]
    numbers["1.21"].click()
    assert driver.execute_script(MARKED, "num-hl") == [[2, 50, True]]
    assert driver.execute_script(MARKED, "claim-hl") == [[2, i, True] for i in range(50, 60)]
    assert detail.text.startswith("“1.21” is in the call, stated for eps; stated in agent 2, line 5 (marked):")
    assert detail.find_element(By.CSS_SELECTOR, "q.claim-source").text.strip("“”\"") == \
        " ".join(f"a2s5w{i}" for i in range(9)) + "."

    # stated for something else: linked to where it was copied from (agent 1, token 120), that
    # sentence shown
    numbers["3.7"].click()
    assert driver.execute_script(MARKED, "num-hl") == [[1, 120, True]]
    assert driver.execute_script(MARKED, "claim-hl") == [[1, i, True] for i in range(120, 130)]
    assert detail.text.startswith("“3.7” is in the call, but stated for something else, not for ebitda; copied from "
                                  "agent 1, line 12 (marked):")
    assert "a1s12w0" in detail.find_element(By.CSS_SELECTOR, "q.claim-source").text

    # not in the call: nothing marked
    numbers["12"].click()
    assert driver.execute_script(MARKED, "num-hl") == [] and driver.execute_script(MARKED, "claim-hl") == []
    assert detail.text == "“12” is not in the call: check it before you use it."
    numbers["40"].click()
    assert driver.execute_script(MARKED, "num-hl") == [[0, 15, True]]
    ARTIFACTS.mkdir(exist_ok=True)
    numbers["3.7"].click()
    driver.set_window_size(1280, 1500)
    driver.execute_script("document.getElementById('summary-title').scrollIntoView();")
    driver.save_screenshot(str(ARTIFACTS / "web_page_number_marks.png"))
    driver.set_window_size(1280, 1000)
    severe = [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]
    assert not severe, f"browser console errors: {severe}"


def test_the_agent_legend_of_a_call_with_many_agents_wraps_inside_its_panel(server, driver):
    """21 agents (the most an ECTSum validation call gets at 400 tokens each): the legend wraps onto
    more lines instead of widening the page, and every name stays on one line."""
    from selenium.webdriver.common.by import By

    _show_canned(server, driver, _long_answer(agents=21))
    assert len(driver.find_elements(By.CSS_SELECTOR, "#legend li")) == 21
    layout = driver.execute_script("""
      const panel = document.getElementById('legend').getBoundingClientRect();
      const items = [...document.querySelectorAll('#legend li')].map((li) => li.getBoundingClientRect());
      return {page: document.documentElement.scrollWidth, window: document.documentElement.clientWidth,
              right: Math.max(...items.map((r) => r.right)), panel: panel.right,
              tallest: Math.max(...items.map((r) => r.height)), rows: new Set(items.map((r) => r.top)).size};""")
    assert layout["page"] <= layout["window"], layout
    assert layout["right"] <= layout["panel"] + 1, layout
    assert layout["rows"] > 1 and layout["tallest"] < 30, layout


#: The page's first eight agent colours (Okabe-Ito, agentsum/web/app.js).
OKABE_ITO = ["#0072B2", "#E69F00", "#009E73", "#CC79A7", "#D55E00", "#56B4E9", "#7f6a1a", "#555555"]


def _lab(rgb: tuple[int, int, int]) -> tuple[float, float, float]:
    """CIELAB (D65) of an sRGB colour."""
    def linear(v):
        c = v / 255
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4

    r, g, b = map(linear, rgb)
    def f(t):
        return t ** (1 / 3) if t > 0.008856 else 7.787 * t + 16 / 116

    x = f((0.4124 * r + 0.3576 * g + 0.1805 * b) / 0.95047)
    y = f(0.2126 * r + 0.7152 * g + 0.0722 * b)
    z = f((0.0193 * r + 0.1192 * g + 0.9505 * b) / 1.08883)
    return 116 * y - 16, 500 * (x - y), 200 * (y - z)


def test_agents_past_eight_keep_colours_of_their_own(server, driver):
    """21 agents: the first 8 have the Okabe-Ito colours, and all 21 differ, each pair at least 20
    apart in CIELAB (dE76; a colour 10 apart is already told apart side by side); the sections and
    the sentence bar's segments use the legend's colours."""
    import itertools
    import math

    _show_canned(server, driver, _long_answer(agents=21))
    legend = driver.execute_script(
        "return [...document.querySelectorAll('#legend li')].map((li) => li.style.getPropertyValue('--agent-color'));")
    bands = driver.execute_script("return [...document.querySelectorAll('#source .agent-band')].map("
                                  "(b) => b.style.getPropertyValue('--agent-color'));")
    bar = driver.execute_script("return [...document.querySelector('#summary .agent-bar').querySelectorAll("
                                "'.agent-seg')].map((s) => getComputedStyle(s).backgroundColor);")
    assert len(legend) == len(bands) == len(bar) == 21 and bands == legend
    assert [c.lower() for c in legend[:8]] == [c.lower() for c in OKABE_ITO]
    rgb = [tuple(int(c[i:i + 2], 16) for i in (1, 3, 5)) for c in legend]
    assert bar == [f"rgb({r}, {g}, {b})" for r, g, b in rgb]
    closest = min(math.dist(_lab(p), _lab(q)) for p, q in itertools.combinations(rgb, 2))
    assert closest >= 20, closest
    # agent 8, the first past the palette, is not agent 0's colour again (it was, with PALETTE[a % 8])
    assert legend[8].lower() != legend[0].lower()


def test_the_servers_warning_about_a_long_text_is_shown_and_goes_with_the_summary(server, driver):
    """A summary's `warnings` (a text far longer than the model reads) is shown under the form; the
    next summary, without one, takes it off the screen."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    answer = _long_answer()
    warning = "The text has 12,000 words; this model reads its first 800 tokens. Try --model calls."
    answer["summaries"][0]["warnings"] = [warning]
    _show_canned(server, driver, answer)
    box = driver.find_element(By.ID, "warning")
    assert box.is_displayed() and box.text == warning
    # the next answer has no warning: the box goes
    del answer["summaries"][0]["warnings"]
    driver.execute_script("""
        const answer = arguments[0];
        window.fetch = () => Promise.resolve(new Response(JSON.stringify(answer),
                                                          {headers: {'Content-Type': 'application/json'}}));
    """, answer)
    driver.find_element(By.ID, "summarize").click()
    WebDriverWait(driver, 30).until(lambda d: not d.find_element(By.ID, "warning").is_displayed())
    assert driver.find_element(By.ID, "warning").text == ""


#: Wrap the page's fetch before its script runs: /v1/model answers with the server's search_defaults
#: changed by ``window.defaultsChange`` (and its other fields by ``window.modelChange``); /v1/summarize records each request body in ``window.sent`` and
#: answers ``window.answer``.
RECORD_REQUESTS = """
window.sent = [];
const fetchFromServer = window.fetch;
window.fetch = async (url, options) => {
  if (url === '/v1/model') {
    const info = await (await fetchFromServer(url, options)).json();
    Object.assign(info.search_defaults, window.defaultsChange || {});
    Object.assign(info, window.modelChange || {});
    return new Response(JSON.stringify(info), {headers: {'Content-Type': 'application/json'}});
  }
  if (url === '/v1/summarize') {
    window.sent.push(JSON.parse(options.body));
    return new Response(JSON.stringify(window.answer), {headers: {'Content-Type': 'application/json'}});
  }
  return fetchFromServer(url, options);
};
"""
CLAIM_BOXES = {"figure-grammar": "figure_grammar", "source-periods": "source_periods",
               "numbers-in-context": "numbers_in_context", "attribution-rerank": "attribution_rerank",
               "role-names": "role_names"}


def test_the_claim_boxes_start_as_the_model_decodes_and_a_changed_one_is_sent(server, driver):
    """Each claim constraint's box starts at the model's search_defaults (here source_periods made on);
    a box the user changes is sent as its field (true or false), one left alone is not, and one
    changed back to the default is not sent again. Each box's setting has a one-sentence tooltip."""
    import httpx
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    defaults = httpx.get(server + "/v1/model", timeout=30).json()["search_defaults"]
    assert {key: defaults[key] for key in CLAIM_BOXES.values()} == dict.fromkeys(CLAIM_BOXES.values(), False)
    script = "window.defaultsChange = {source_periods: true};" + RECORD_REQUESTS
    added = driver.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": script})
    try:
        wait = WebDriverWait(driver, 30)
        driver.get(server + "/")
        wait.until(lambda d: "agents" in d.find_element(By.ID, "model-info").text)
        driver.execute_script("window.answer = arguments[0];", _canned_answer([["The", "cat", "ran", "."]], ["The"]))
        driver.find_element(By.CSS_SELECTOR, "details.options > summary").click()
        boxes = {key: driver.find_element(By.ID, box) for box, key in CLAIM_BOXES.items()}
        assert {key: box.is_selected() for key, box in boxes.items()} == {
            "figure_grammar": False, "source_periods": True, "numbers_in_context": False,
            "attribution_rerank": False, "role_names": False}
        for box in boxes.values():
            tooltip = box.find_element(By.XPATH, "./ancestor::*[@title][1]").get_attribute("title")
            assert tooltip.endswith(".") and tooltip.count(". ") == 0, tooltip

        driver.find_element(By.ID, "article").send_keys(_article())
        boxes["figure_grammar"].click()
        boxes["source_periods"].click()
        boxes["role_names"].click()
        driver.find_element(By.ID, "summarize").click()
        wait.until(lambda d: "Done" in d.find_element(By.ID, "status").text)
        (body,) = driver.execute_script("return window.sent;")
        assert body["figure_grammar"] is True and body["source_periods"] is False and body["role_names"] is True
        assert "numbers_in_context" not in body and "numbers_from_source" not in body

        # back at the model's default: nothing sent for it
        boxes["source_periods"].click()
        driver.find_element(By.ID, "summarize").click()
        wait.until(lambda d: len(d.execute_script("return window.sent;")) == 2)
        body = driver.execute_script("return window.sent;")[1]
        assert body["figure_grammar"] is True and "source_periods" not in body
    finally:
        driver.execute_cdp_cmd("Page.removeScriptToEvaluateOnNewDocument", {"identifier": added["identifier"]})


def test_a_claim_the_model_cannot_honour_shows_the_servers_refusal(server, driver):
    """The tiny model's vocabulary holds no numeral: asked for well-formed figures, the server answers
    422 naming figure_grammar, and the page shows that message in its error box, with no summary."""
    import httpx
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    refused = httpx.post(server + "/v1/summarize", json={"text": _article(), "figure_grammar": True}, timeout=60)
    assert refused.status_code == 422
    wait = WebDriverWait(driver, 30)
    driver.get(server + "/")
    wait.until(lambda d: "agents" in d.find_element(By.ID, "model-info").text)
    driver.find_element(By.ID, "article").send_keys(_article())
    driver.find_element(By.CSS_SELECTOR, "details.options > summary").click()
    driver.find_element(By.ID, "figure-grammar").click()
    driver.find_element(By.ID, "summarize").click()
    wait.until(lambda d: d.find_element(By.ID, "error").is_displayed())
    error = driver.find_element(By.ID, "error").text
    assert error == refused.json()["error"] and "figure_grammar" in error, error
    assert not driver.find_element(By.ID, "results").is_displayed()
    assert driver.find_element(By.ID, "summarize").is_enabled()


def test_the_lm_weight_box_is_off_for_a_model_without_a_summary_lm_and_sent_when_filled_in(server, driver):
    """The tiny model has no summary language model: the box is disabled and says why. A model with
    one (the page told so) takes a weight, sent as lm_weight; left empty, nothing is sent."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    wait = WebDriverWait(driver, 30)
    driver.get(server + "/")
    wait.until(lambda d: "agents" in d.find_element(By.ID, "model-info").text)
    box = driver.find_element(By.ID, "lm-weight")
    assert not box.is_enabled() and "no summary language model" in box.get_attribute("title")
    added = driver.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument",
                                   {"source": "window.modelChange = {summary_lm: true};" + RECORD_REQUESTS})
    try:
        driver.get(server + "/")
        wait.until(lambda d: "agents" in d.find_element(By.ID, "model-info").text)
        driver.execute_script("window.answer = arguments[0];", _canned_answer([["The", "cat", "ran", "."]], ["The"]))
        driver.find_element(By.CSS_SELECTOR, "details.options > summary").click()
        box = driver.find_element(By.ID, "lm-weight")
        assert box.is_enabled() and box.get_attribute("placeholder") == "0"
        driver.find_element(By.ID, "article").send_keys(_article())
        driver.find_element(By.ID, "summarize").click()
        wait.until(lambda d: len(d.execute_script("return window.sent;")) == 1)
        box.send_keys("0.1")
        driver.find_element(By.ID, "summarize").click()
        wait.until(lambda d: len(d.execute_script("return window.sent;")) == 2)
        first, second = driver.execute_script("return window.sent;")
        assert "lm_weight" not in first and second["lm_weight"] == 0.1
    finally:
        driver.execute_cdp_cmd("Page.removeScriptToEvaluateOnNewDocument", {"identifier": added["identifier"]})
