"""Mermaid diagrams rendered by Mermaid's own renderer in headless Chromium, for tests that
prove a diagram renders (the Markdown run summary's flowchart and gantt) and for the docs'
screenshots. scripts/browser.sh installs both parts: Debian's chromium and Mermaid's browser
bundle (pinned, checked) in ${SERVICES_DIR:-.services}/tools/mermaid.

The page is a file:// page in a folder of the caller's; Chromium loads nothing else (no host
resolves, and the page's Content-Security-Policy allows only its own two scripts and data:
images). Chromium's --dump-dom serialises the page once Mermaid has finished: with
--virtual-time-budget the dump comes only after that much virtual time (timers run without
waiting in real time), and the results element is written only after the last diagram, so a
dump taken too early has none and fails loudly instead of passing on half a page."""

from __future__ import annotations

import hashlib
import html
import json
import os
import re
import secrets
import shutil
import signal
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SERVICES = Path(os.environ.get("SERVICES_DIR") or REPO / ".services")
MERMAID = SERVICES / "tools" / "mermaid" / "mermaid.min.js"
CHROMIUM = Path("/usr/bin/chromium")
BROWSER_SH = REPO / "scripts" / "browser.sh"

TITLE = "mermaid harness"
WIDTH = 1400  # the window's width in both runs: Mermaid's SVGs scale to it (useMaxWidth)
# Virtual milliseconds Chromium lets the page run before it dumps or shoots it. Timers are
# fast-forwarded, so this is no wait in real time; Mermaid's renders take a few hundred.
BUDGET_MS = 20_000

FLAGS = (
    "--headless",
    "--no-sandbox",  # root in CI and in containers
    "--disable-gpu",
    "--disable-dev-shm-usage",  # a container's 64 MB /dev/shm crashes renderers
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-extensions",
    "--mute-audio",
    "--no-proxy-server",  # no proxy from the environment: every host goes through the rule below
    # every name but localhost fails to resolve: Chromium's own background requests
    # (accounts.google.com, update.googleapis.com; they happen despite the flags above) fail
    "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE localhost",
    f"--virtual-time-budget={BUDGET_MS}",
)

# Runs in the page: every source in order, each on its own (one that fails does not stop the
# rest), then one hidden <pre id="results"> with a JSON array of {svg, error, title}, its
# text escaped by the DOM dump. `title` is document.title after that diagram: a source that
# ran as script in the page would show there.
PAGE_SCRIPT = """
(async () => {
  const out = [];
  let fatal = "";
  try {
    const sources = JSON.parse(document.getElementById("sources").textContent);
    mermaid.initialize({ startOnLoad: false, securityLevel: "strict" });
    for (let i = 0; i < sources.length; i++) {
      let svg = "";
      let error = "";
      try {
        await mermaid.parse(sources[i]);
        svg = (await mermaid.render("d" + i, sources[i])).svg;
      } catch (e) {
        error = (e instanceof Error ? e.message : typeof e === "string" ? e : JSON.stringify(e))
          || "mermaid failed without a message";
      }
      out.push({ svg, error, title: document.title });
      if (svg) {
        const figure = document.createElement("div");
        figure.className = "diagram";
        figure.innerHTML = svg;
        document.body.appendChild(figure);
      }
    }
  } catch (e) {
    fatal = String((e && e.stack) || e) || "the page failed";
  }
  const pre = document.createElement("pre");
  pre.id = "results";
  pre.hidden = true;
  // the content's height (the document's own is never less than the window's)
  pre.dataset.height = String(Math.ceil(document.body.getBoundingClientRect().bottom) + 16);
  pre.dataset.fatal = fatal;
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
})();
"""

PAGE = """<!doctype html>
<html>
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; \
script-src 'nonce-{nonce}'; style-src 'unsafe-inline'; img-src data:; font-src data:">
<title>{title}</title>
<style>body {{ margin: 16px; background: #fff; }} .diagram {{ margin: 0 0 24px; }}</style>
</head>
<body>
<script type="application/json" id="sources">{sources}</script>
<script nonce="{nonce}" src="mermaid.min.js"></script>
<script nonce="{nonce}">{script}</script>
</body>
</html>
"""


@dataclass(frozen=True)
class Rendered:
    """One diagram: its source, the SVG Mermaid made of it, and why not ("" when it rendered).
    title: the page's document.title after it; TITLE unless a source ran as script."""

    source: str
    svg: str
    error: str
    title: str


def _script_json(value: object) -> str:
    """JSON that cannot end or re-enter the <script> element it sits in: every <, > and &
    is a \\u escape, so no `</script>` and no `<!--<script>` (which would make the real end
    tag part of the text) can appear; JSON.parse reads the same strings back."""
    text = json.dumps(value)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def run_chromium(
    args: Sequence[str], folder: Path, profile: str
) -> subprocess.CompletedProcess[str]:
    """/usr/bin/chromium with FLAGS and args, a fresh profile folder/profile, HOME in folder;
    AssertionError (with stderr's tail) when it fails or runs past 120 s."""
    user_data = folder / profile
    shutil.rmtree(user_data, ignore_errors=True)
    home = folder / "home"  # the wrapper's and Chromium's ~ stay inside the folder
    home.mkdir(exist_ok=True)
    env = {
        **os.environ,
        "HOME": str(home),
        "TZ": "UTC",  # a gantt's axis (%M:%S of epoch milliseconds) reads the same everywhere
        "LANG": "C.UTF-8",
    }
    command = [str(CHROMIUM), *FLAGS, f"--user-data-dir={user_data}", *args]
    # A session of its own: on a timeout the whole browser (zygote, renderers) is killed.
    with subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        start_new_session=True,
    ) as browser:
        try:
            stdout, stderr = browser.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            os.killpg(browser.pid, signal.SIGKILL)
            stdout, stderr = browser.communicate()
            raise AssertionError(
                f"Chromium did not finish in 120 s: {command}\n{_tail(stderr)}"
            ) from None
    done = subprocess.CompletedProcess(command, browser.returncode, stdout, stderr)
    if done.returncode != 0:
        raise AssertionError(
            f"Chromium failed (exit {done.returncode}): {command}\n{_tail(done.stderr)}"
        )
    return done


def _tail(stderr: str, lines: int = 30) -> str:
    return "stderr's last lines:\n" + "\n".join(stderr.splitlines()[-lines:])


RESULTS = re.compile(r'<pre\b([^>]*\bid="results"[^>]*)>(.*?)</pre>', re.S)


def render_mermaid(
    diagrams: Sequence[str], folder: Path, screenshot: Path | None = None
) -> list[Rendered]:
    """Renders each diagram with Mermaid in headless Chromium, in order and each on its own;
    with `screenshot`, a PNG of them all, one under the other (1400 px wide). Writes
    folder/page.html and a copy of the bundle beside it. AssertionError when Chromium fails
    or the page did not finish (no results)."""
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(MERMAID, folder / "mermaid.min.js")
    page = folder / "page.html"
    page.write_text(
        PAGE.format(
            nonce=secrets.token_urlsafe(16),
            title=TITLE,
            sources=_script_json(list(diagrams)),
            script=PAGE_SCRIPT,
        ),
        encoding="utf-8",
    )
    url = page.resolve().as_uri()
    dumped = run_chromium([f"--window-size={WIDTH},900", "--dump-dom", url], folder, "profile-dom")
    found = RESULTS.findall(dumped.stdout)
    if not found:
        raise AssertionError(
            f"{page}: the page wrote no results (Mermaid did not finish within the"
            f" {BUDGET_MS} ms virtual-time budget, or did not load)\n{_tail(dumped.stderr)}"
        )
    attributes, text = found[-1]  # the page's own: appended last, after every SVG
    fatal = re.search(r'data-fatal="([^"]*)"', attributes)
    if fatal and fatal.group(1):
        raise AssertionError(f"{page}: the page failed: {html.unescape(fatal.group(1))}")
    results = json.loads(html.unescape(text))
    if len(results) != len(diagrams):
        raise AssertionError(f"{page}: {len(results)} results for {len(diagrams)} diagrams")
    rendered = [
        Rendered(source=source, svg=r["svg"], error=r["error"], title=r["title"])
        for source, r in zip(diagrams, results, strict=True)
    ]
    if screenshot is not None:
        measured = re.search(r'data-height="(\d+)"', attributes)
        height = min(max(int(measured.group(1)) if measured else 900, 200), 16_384)
        screenshot.parent.mkdir(parents=True, exist_ok=True)
        screenshot.unlink(missing_ok=True)
        shot = run_chromium(
            [
                f"--screenshot={screenshot.resolve()}",
                f"--window-size={WIDTH},{height}",
                "--hide-scrollbars",
                url,
            ],
            folder,
            "profile-shot",
        )
        if not screenshot.is_file():
            raise AssertionError(f"Chromium wrote no {screenshot}\n{_tail(shot.stderr)}")
    return rendered


FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})\s*([^`\s]*)[^`]*$")


def mermaid_blocks(markdown: str) -> list[str]:
    """The bodies of the ```mermaid (or ~~~mermaid) fenced blocks of a Markdown text, in
    order; fences of other languages are skipped whole (a ```mermaid line inside one is
    text). A block left open runs to the end of the text, as CommonMark has it."""
    blocks: list[str] = []
    fence = ""  # the open fence's characters, "" outside any
    body: list[str] | None = None  # the open block's lines, when it is a mermaid one
    for line in markdown.splitlines():
        if not fence:
            opened = FENCE.match(line)
            if opened:
                fence = opened.group(1)
                body = [] if opened.group(2) == "mermaid" else None
            continue
        stripped = line.strip()
        if (
            len(line) - len(line.lstrip(" ")) <= 3
            and stripped
            and set(stripped) == {fence[0]}
            and len(stripped) >= len(fence)
        ):
            if body is not None:
                blocks.append("\n".join(body))
            fence, body = "", None
        elif body is not None:
            body.append(line)
    if fence and body is not None:
        blocks.append("\n".join(body))
    return blocks


def _pinned_sha256() -> str:
    found = re.search(r"^mermaid_sha256=([0-9a-f]{64})$", BROWSER_SH.read_text(), re.M)
    return found.group(1) if found else ""


def browser_ready() -> str | None:
    """None when Chromium runs and the Mermaid bundle is the one scripts/browser.sh pins;
    else why not (scripts/browser.sh installs both)."""
    try:
        version = subprocess.run(
            [str(CHROMIUM), "--version"], capture_output=True, text=True, timeout=60, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"{CHROMIUM} does not run ({e}): run scripts/browser.sh"
    if version.returncode != 0 or "Chromium" not in version.stdout:
        return f"{CHROMIUM} --version failed: {_tail(version.stderr, 5)}; run scripts/browser.sh"
    if not MERMAID.is_file():
        return f"no {MERMAID}: run scripts/browser.sh"
    pinned = _pinned_sha256()
    got = hashlib.sha256(MERMAID.read_bytes()).hexdigest()
    if got != pinned:
        return f"{MERMAID} is not the pinned bundle (sha256 {got}, pinned {pinned!r})"
    return None
