"""The HTML report in a real headless browser: it loads without errors or network requests, a
cluster opens side by side with the differing words highlighted, the search box filters, the
threshold is stated and drawn, a member below it shows the chain of pairs that joined it, and on a
narrow screen opening a cluster scrolls to it.

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
    rows += ["zebra,zebra,1", "zebra-copy,zebra,0.9"]
    # a chain: lion-far is below the threshold to lion, joined through lion-mid
    docs.append({"id": "lion", "text": "the lion sleeps in the shade of the old tree near the river"})
    docs.append({"id": "lion-mid", "text": "the lion sleeps in the shade of the tall tree near the river"})
    docs.append({"id": "lion-far", "text": "a lion sleeps in the shade of the tall tree by the river"})
    rows += ["lion,lion,1", "lion-mid,lion,0.86", "lion-far,lion,0.7"]
    pairs = ["id_a,id_b,similarity", "lion,lion-mid,0.86", "lion-far,lion-mid,0.82", "zebra,zebra-copy,0.9"]
    (d / "docs.jsonl").write_text("".join(json.dumps(x) + "\n" for x in docs))
    (d / "clusters.csv").write_text("\n".join(rows) + "\n")
    (d / "pairs.csv").write_text("\n".join(pairs) + "\n")
    build_report(
        [str(d / "docs.jsonl")],
        str(d / "clusters.csv"),
        str(d / "report.html"),
        pairs_path=str(d / "pairs.csv"),
        threshold=0.8,
    )
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

    total = N_CLUSTERS + 2
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
    assert page.locator("#detail .chain").count() == 0  # 0.9 is above the threshold
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


def test_threshold_axes_headers_title_and_chain(browser, report):
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(report.as_uri())
    page.wait_for_selector(".cluster-row")
    # the input's name is the title, the threshold a summary row
    assert page.title() == "docs.jsonl: neardup report"
    assert page.locator("h1").inner_text() == "docs.jsonl: neardup report"
    assert page.locator("#summary tr", has_text="threshold").locator("td").inner_text() == "0.8"
    # two histograms, each with a title, labelled axes and a dashed line at the threshold
    hists = page.locator("svg.hist").all()
    assert len(hists) == 2
    for svg, title, y_label in zip(hists, ["members to their kept", "verified pairs"], ["members", "pairs"]):
        texts = svg.locator("text").all_text_contents()
        assert any(title in t for t in texts)
        assert "similarity" in texts and y_label in texts and "threshold 0.8" in texts
        line = svg.locator("line.threshold").bounding_box()
        plot = svg.bounding_box()
        assert line["height"] > plot["height"] / 2  # spans the plot
        ticks = [float(t) for t in texts if re.fullmatch(r"[01]\.\d\d", t)]
        lo, hi = ticks[0], ticks[-1]
        assert hi == 1.0 and lo <= 0.8
        # the line's x position is at 0.8 on the axis between the first and the last tick
        tick_boxes = [b for b in svg.locator("text.a").all() if re.fullmatch(r"[01]\.\d\d", b.text_content())]
        x_lo = tick_boxes[0].bounding_box()["x"] + tick_boxes[0].bounding_box()["width"] / 2
        x_hi = tick_boxes[-1].bounding_box()["x"] + tick_boxes[-1].bounding_box()["width"] / 2
        want = x_lo + (x_hi - x_lo) * (0.8 - lo) / (hi - lo)
        assert abs(line["x"] + line["width"] / 2 - want) < 3
        # readable: tick labels at least 10 CSS pixels tall as drawn (the SVG scales to its card)
        assert min(b.bounding_box()["height"] for b in tick_boxes) >= 10
    # column headers above the cluster list, aligned with the columns
    heads = page.locator(".list-head span").all()
    assert [h.inner_text() for h in heads] == ["size", "lowest sim.", "kept document (cluster id)"]
    row = page.locator(".cluster-row").first
    for head, cell in zip(heads, [row.locator(".size"), row.locator(".sim"), row.locator(".snippet")]):
        assert abs(head.bounding_box()["x"] - cell.bounding_box()["x"]) < 2
    # a member below the threshold shows the chain of verified pairs that joined it
    page.fill("#search", "lion-far")
    expect(page.locator("#count")).to_have_text(re.compile("^1 of"))
    page.click(".cluster-row")
    assert "threshold 0.8" in page.locator("#detail > p.muted").inner_text()
    far, mid = page.locator("#detail .pair").all()
    assert "lion-far (similarity 0.700)" in far.locator("h3").inner_text()
    assert far.locator(".chain .hop").all_inner_texts() == ["lion", "(0.860) lion-mid", "(0.820) lion-far"]
    assert "Below the threshold 0.8" in far.locator(".chain").inner_text()
    assert mid.locator(".chain").count() == 0  # 0.86 reaches the threshold
    assert errors == []
    page.close()


def test_opening_a_cluster_scrolls_to_it_on_a_narrow_screen(browser, report):
    page = browser.new_page(viewport={"width": 390, "height": 800})
    page.goto(report.as_uri())
    page.wait_for_selector(".cluster-row")
    detail = page.locator("#detail")
    assert detail.bounding_box()["y"] > 800  # one column: the detail is below the list
    page.locator(".cluster-row").nth(5).click()
    page.wait_for_selector("#detail .side-by-side")
    expect(detail.locator("h2")).to_be_in_viewport()
    top = detail.evaluate("e => e.getBoundingClientRect().top")
    # scrolled to its top, or as far as the page goes when the rest of it is shorter than a screen
    at_end = page.evaluate("Math.ceil(window.scrollY + window.innerHeight) >= document.documentElement.scrollHeight")
    assert 0 <= top < 800 and (abs(top) < 2 or at_end)
    assert page.evaluate("window.scrollY") > 0
    page.close()
    # at full width both columns are side by side and nothing scrolls
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.goto(report.as_uri())
    page.wait_for_selector(".cluster-row")
    row = page.locator(".cluster-row").nth(5)
    row.scroll_into_view_if_needed()
    before = page.evaluate("window.scrollY")
    row.click()
    page.wait_for_selector("#detail .side-by-side")
    assert page.evaluate("window.scrollY") == before
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
