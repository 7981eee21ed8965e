"""The HTML report in a real headless browser: it loads without errors or network requests, a
cluster opens side by side with the differing words highlighted, and the search box filters.

Needs the Debian ``chromium`` package and the PyPI ``playwright`` package (its driver only: the
browser is the system one); skipped when either is missing. ``NEARDUP_CHROMIUM`` overrides the
browser path.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import pytest

from neardup.eval.report import build_report

CHROMIUM = os.environ.get("NEARDUP_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]

sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip install playwright)")
expect = sync_api.expect
if not Path(CHROMIUM).is_file():
    pytest.skip(f"no chromium at {CHROMIUM} (apt-get install chromium)", allow_module_level=True)

N_CLUSTERS = 250  # more than one page of the list (200 rows)


@pytest.fixture(scope="module")
def report(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("browser")
    docs, rows = [], ["id,cluster,similarity"]
    for c in range(N_CLUSTERS):
        kept = f"doc{c:04d}"
        text = f"story {c} the council approved the new parking plan for the harbour district today"
        docs.append({"id": kept, "text": text})
        rows.append(f"{kept},{kept},1")
        for m in range(1 + (c == 7) * 3):  # cluster 7 is the largest: 5 documents
            member = f"{kept}-v{m}"
            docs.append({"id": member, "text": text.replace("parking", "cycling").replace("today", f"on day {m}")})
            rows.append(f"{member},{kept},{0.9 - 0.01 * m}")
    docs.append({"id": "zebra", "text": "a unique text about a zebra crossing the road"})
    docs.append({"id": "zebra-copy", "text": "a unique text about a zebra crossing the street"})
    rows += ["zebra,zebra,1", "zebra-copy,zebra,0.7"]
    (d / "docs.jsonl").write_text("".join(json.dumps(x) + "\n" for x in docs))
    (d / "clusters.csv").write_text("\n".join(rows) + "\n")
    build_report([str(d / "docs.jsonl")], str(d / "clusters.csv"), str(d / "report.html"))
    return d / "report.html"


@pytest.fixture(scope="module")
def browser():
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield b
        b.close()


def test_report_in_headless_chromium(browser, report):
    page = browser.new_page()
    problems, requests = [], []
    page.on("console", lambda m: m.type in ("error", "warning") and problems.append(f"console {m.type}: {m.text}"))
    page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
    page.on("request", lambda r: requests.append(r.url))
    page.goto(report.as_uri())
    page.wait_for_selector(".cluster-row")

    total = N_CLUSTERS + 1
    assert page.inner_text("#count") == f"{total} of {total} clusters (showing 200)"
    assert page.locator(".cluster-row").count() == 200
    page.click("#more")
    assert page.locator(".cluster-row").count() == total
    assert page.locator("#more").is_hidden()

    # the largest cluster comes first; opening it shows each member beside the kept document
    first = page.locator(".cluster-row").first
    assert first.locator(".size").inner_text() == "5"
    first.click()
    page.wait_for_selector("#detail .side-by-side")
    assert page.locator("#detail .pair").count() == 4
    pair = page.locator("#detail .pair").first
    assert "doc0007-v3" in pair.locator("h3").inner_text()  # lowest similarity first
    assert pair.locator("mark.del").all_inner_texts() == ["parking", "today"]
    assert pair.locator("mark.ins").all_inner_texts() == ["cycling", "on day 3"]
    kept_side, member_side = pair.locator(".doc").all()
    assert "parking plan" in kept_side.locator("pre").inner_text()
    assert "cycling plan" in member_side.locator("pre").inner_text()

    # the search box filters by text and by id
    page.fill("#search", "ZEBRA crossing")
    expect(page.locator("#count")).to_have_text(re.compile("^1 of"))
    assert page.locator(".cluster-row").count() == 1
    page.click(".cluster-row")
    assert page.locator("#detail mark.ins").all_inner_texts() == ["street"]
    page.fill("#search", "doc0123-v0")  # a member's id finds its cluster
    expect(page.locator(".cluster-row .cid")).to_have_text("doc0123")
    expect(page.locator("#count")).to_have_text(re.compile("^1 of"))
    page.fill("#search", "no such words anywhere")
    expect(page.locator("#count")).to_have_text(re.compile("^0 of"))
    assert page.locator(".cluster-row").count() == 0
    page.fill("#search", "")
    expect(page.locator("#count")).to_have_text(re.compile(f"^{total} of"))

    assert problems == []
    assert requests and all(url.startswith("file://") for url in requests), requests
    page.close()


def test_cluster_link_opens_on_load(browser, report):
    page = browser.new_page()
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(report.as_uri() + "#cluster=zebra")
    page.wait_for_selector("#detail .side-by-side")
    assert page.locator("#detail h2").inner_text() == "Cluster zebra"
    assert errors == []
    page.close()
