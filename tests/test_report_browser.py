"""A real browser (Debian's headless Chromium via Playwright) opens the report with the network
disabled: no request leaves the file, nothing fails, the forest plots and tables are there, the
tables sort, and Japanese is drawn with a CJK font (not as empty boxes).

Set EVALPIPE_SCREENSHOT=docs/images/report.png to also save the README screenshot."""

from __future__ import annotations

import os

import pytest
from click.testing import CliRunner

from evalpipe.paths import ProjectPaths
from evalpipe.report.html import slug
from stages.report import main
from tests.test_report_stage import M, lay_out

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(300)]


class Watch:
    """Every request, failure, console error and page error of one page; the network is cut:
    a request that is not for a local file is recorded and aborted."""

    def __init__(self, context, page) -> None:
        self.requests: list[str] = []
        self.external: list[str] = []
        self.failed: list[str] = []
        self.errors: list[str] = []
        page.on("request", lambda r: self.requests.append(r.url))
        page.on("requestfailed", lambda r: self.failed.append(r.url))
        page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: self.errors.append(str(e)))

        def route(r):
            if r.request.url.startswith("file://"):
                r.continue_()
            else:
                self.external.append(r.request.url)
                r.abort()

        context.route("**/*", route)


def open_offline(browser, url: str):
    context = browser.new_context(offline=True, viewport={"width": 1300, "height": 1000})
    page = context.new_page()
    watch = Watch(context, page)
    page.goto(url)
    page.wait_for_load_state("load")
    return context, page, watch


def platform_fonts(context, page, selector: str) -> list[str]:
    """The fonts Chromium actually used to draw the text of ``selector`` (DevTools protocol)."""
    cdp = context.new_cdp_session(page)
    cdp.send("DOM.enable")
    cdp.send("CSS.enable")
    root = cdp.send("DOM.getDocument", {"depth": -1})["root"]["nodeId"]
    node = cdp.send("DOM.querySelector", {"nodeId": root, "selector": selector})["nodeId"]
    fonts = cdp.send("CSS.getPlatformFontsForNode", {"nodeId": node})["fonts"]
    return [f["familyName"] for f in fonts]


def test_report_opens_offline_with_plots_sortable_tables_and_japanese(browser, tmp_path):
    lay_out(tmp_path)
    result = CliRunner().invoke(
        main, ["build", "--root", str(tmp_path), "--params", str(tmp_path / "params.yaml")]
    )
    assert result.exit_code == 0, result.output
    report = ProjectPaths(tmp_path).report_html
    context, page, watch = open_offline(browser, report.as_uri())

    if os.environ.get("EVALPIPE_SCREENSHOT"):  # before any click scrolls the page
        top = page.locator("#answer").bounding_box()
        assert top is not None
        page.screenshot(
            path=os.environ["EVALPIPE_SCREENSHOT"],
            clip={"x": 0, "y": top["y"] - 8, "width": 1300, "height": 1500},
            full_page=True,
        )

    assert watch.requests == [report.as_uri()]
    assert watch.external == [] and watch.failed == [] and watch.errors == []

    # forest plots: one per language, each with its words drawn
    plots = page.locator("#words figure svg")
    assert plots.count() >= 2
    assert page.locator("#words svg text", has_text="する (為る · 動詞-非自立可能)").count() == 1
    box = plots.first.bounding_box()
    assert box is not None and box["width"] > 300 and box["height"] > 80
    for table in ("#headline-table", "#words-english-wordfreq", "#parse-status", "#agreement-axes"):
        assert page.locator(f"{table} tbody tr").count() >= 1, table

    # the first screen is the answer: its word table is in view without scrolling
    answer = page.locator(f"#answer-words-english-{slug(M, 'wordfreq')}").bounding_box()
    assert answer is not None and answer["y"] < page.viewport_size["height"]

    # sorting: accuracy change ascending puts the most harmful English word first, then descending
    delta = page.locator("#words-english-wordfreq thead th", has_text="accuracy change").first
    delta.click()
    first = page.locator("#words-english-wordfreq tbody tr").first.locator("td").nth(2)
    assert first.inner_text() == "of"  # gsm8k row, delta -0.300
    delta.click()
    assert first.inner_text() == "and"  # +0.050; the row without a delta stays last
    last = page.locator("#words-english-wordfreq tbody tr").last.locator("td").nth(2)
    assert last.inner_text() == "to"

    # Japanese is drawn with a Japanese font, in tables and in the example texts
    word_cell = "#words-japanese-wordfreq tbody tr:first-child td:nth-child(3)"
    assert page.locator(word_cell).inner_text() == "する"
    assert any("CJK" in f for f in platform_fonts(context, page, word_cell))
    assert any("CJK" in f for f in platform_fonts(context, page, "#examples pre.text"))

    page.screenshot(path=str(tmp_path / "report.png"), full_page=True)
    assert (tmp_path / "report.png").stat().st_size > 50_000
    context.close()


def test_the_typo_examples_mark_the_changed_characters_offline(browser, tmp_path):
    """The typo section on real perturb output: every kind's table is drawn, the changed
    characters carry the visible mark, and the Japanese examples use a CJK font."""
    from tests.report_fixtures import typo_sets, write_typo_sets
    from tests.test_report_stage import M

    paths = lay_out(tmp_path)
    write_typo_sets(paths, typo_sets("keyboard"), M)
    result = CliRunner().invoke(
        main, ["build", "--root", str(tmp_path), "--params", str(tmp_path / "params.yaml")]
    )
    assert result.exit_code == 0, result.output
    context, page, watch = open_offline(browser, paths.report_html.as_uri())
    assert watch.external == [] and watch.failed == [] and watch.errors == []
    for kind in ("replace", "insert", "delete", "transpose", "conversion"):
        assert page.locator(f"#typo-examples-{kind} tbody tr").count() >= 1, kind
    mark = page.locator("#typo-examples-conversion mark.typo").first
    box = mark.bounding_box()
    assert box is not None and box["width"] > 10  # a whole word, drawn
    background = mark.evaluate("m => getComputedStyle(m).backgroundColor")
    assert background == "rgb(253, 230, 138)"  # the highlight, not the page's white
    slot = page.locator("#typo-examples-delete mark.slot").first
    assert slot.evaluate("m => getComputedStyle(m).borderLeftStyle") == "solid"
    cell = "#typo-examples-conversion tbody tr:first-child td:nth-child(2) span.typo-word"
    assert any("CJK" in f for f in platform_fonts(context, page, cell))
    if os.environ.get("EVALPIPE_TYPO_SCREENSHOT"):
        page.locator("#typos").screenshot(path=os.environ["EVALPIPE_TYPO_SCREENSHOT"])
    context.close()


def test_the_watch_catches_an_external_reference(browser, tmp_path):
    """The harness itself: a page that tries to load a script from the network is caught."""
    bad = tmp_path / "bad.html"
    bad.write_text(
        '<!DOCTYPE html><html><head><meta charset="utf-8">'
        '<script src="https://cdn.example.org/vega.js"></script></head><body>x</body></html>',
        encoding="utf-8",
    )
    context, _, watch = open_offline(browser, bad.as_uri())
    assert watch.external == ["https://cdn.example.org/vega.js"]
    assert watch.failed == ["https://cdn.example.org/vega.js"]
    context.close()
